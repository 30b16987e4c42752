"""Drives keel-mcp-server with the official Python MCP SDK (2.x), as a generic client would.

Usage: sdk_client.py SERVER_BIN KEEL_HOME WORKSPACE

Lists the tools, calls `codex` (the mock model asks for one shell command under the
`untrusted` policy), answers the approval elicitation with a standard `accept`, and prints
one line per step for the Rust test to check.
"""

import sys

import anyio
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


async def main() -> None:
    server_bin, keel_home, workspace = sys.argv[1:4]
    # The SDK passes only a few environment variables to the server; KEEL_HOME must be given.
    params = StdioServerParameters(
        command=server_bin,
        env={"KEEL_HOME": keel_home, "RUST_LOG": "warn"},
    )

    async def on_elicit(context, params):  # noqa: ANN001 - SDK callback signature
        extra = params.model_extra or {}
        print(f"ELICITED {extra.get('codex_elicitation')}: {params.message}", flush=True)
        return types.ElicitResult(action="accept", content={})

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=on_elicit) as session:
            init = await session.initialize()
            print(f"PROTOCOL {init.protocol_version}", flush=True)
            tools = await session.list_tools()
            print("TOOLS " + ",".join(tool.name for tool in tools.tools), flush=True)
            result = await session.call_tool(
                "codex",
                {"prompt": "write py.txt", "cwd": workspace},
            )
            if result.is_error:
                raise SystemExit(f"tool failed: {result}")
            print(f"RESULT {result.structured_content['content']}", flush=True)


anyio.run(main)
