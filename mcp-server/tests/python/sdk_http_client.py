"""Drives `keel-mcp-server --listen` over Streamable HTTP with the official Python MCP SDK (2.x).

Usage: sdk_http_client.py URL WORKSPACE MODE

MODE is the SDK's connect mode: `auto` (it probes `server/discover` and so speaks the
stateless 2026-07-28 revision to Keel) or `legacy` (the `initialize` handshake and a
session). Lists the tools, calls `codex` under the `untrusted` policy (the mock model asks for
one shell command; the SDK's elicitation callback accepts it: an `input_required` round on
2026-07-28, an `elicitation/create` request in a session), continues its thread with
`codex-reply`, and prints one line per step for the Rust test to check.
"""

import sys

import anyio
from mcp import Client, types


async def main() -> None:
    url, workspace, mode = sys.argv[1:4]

    async def on_elicit(context, params):  # noqa: ANN001 - SDK callback signature
        extra = params.model_extra or {}
        print(f"ELICITED {extra.get('codex_elicitation')}: {params.message}", flush=True)
        return types.ElicitResult(action="accept", content={})

    async with Client(url, mode=mode, elicitation_callback=on_elicit) as client:
        print(f"PROTOCOL {client.protocol_version}", flush=True)
        tools = await client.list_tools()
        print("TOOLS " + ",".join(tool.name for tool in tools.tools), flush=True)
        first = await client.call_tool(
            "codex",
            {"prompt": "write py.txt", "cwd": workspace, "approval-policy": "untrusted"},
        )
        if first.is_error:
            raise SystemExit(f"tool failed: {first}")
        print(f"RESULT {first.structured_content['content']}", flush=True)
        thread = first.structured_content["threadId"]
        second = await client.call_tool("codex-reply", {"threadId": thread, "prompt": "and then?"})
        if second.is_error:
            raise SystemExit(f"tool failed: {second}")
        print(f"REPLY {second.structured_content['content']}", flush=True)


anyio.run(main)
