//! The MCP servers' resources, for the model (Codex's `list_mcp_resources`,
//! `list_mcp_resource_templates` and `read_mcp_resource`): what the configured servers share
//! as context (files, schemas, records), listed per server and read by URI.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::ToolContext;
use super::builtin::BuiltinTool;
use crate::turn_context::TurnStop;

// The model's arguments; the field docs are what the model reads.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListArgs {
    /// MCP server name. Omit to list from every configured server.
    #[serde(default)]
    server: Option<String>,
    /// Opaque cursor from a previous call; omit for the first page.
    #[serde(default)]
    cursor: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadArgs {
    /// MCP server name exactly as configured (the `server` field of list_mcp_resources).
    server: String,
    /// Resource URI to read (one list_mcp_resources returned).
    uri: String,
}

/// `list_mcp_resources`.
pub(crate) struct ListMcpResourcesTool;

/// `list_mcp_resource_templates`.
pub(crate) struct ListMcpResourceTemplatesTool;

/// `read_mcp_resource`.
pub(crate) struct ReadMcpResourceTool;

impl BuiltinTool for ListMcpResourcesTool {
    type Args = ListArgs;
    const NAME: &'static str = "list_mcp_resources";

    fn description(&self) -> &'static str {
        "List the resources the MCP servers share (files, schemas, records that give you \
         context), each with its server and URI. Prefer them to searching the web."
    }

    async fn run(&self, ctx: &ToolContext, args: ListArgs) -> Result<String, TurnStop> {
        Ok(list(ctx, args, Listing::Resources).await)
    }
}

impl BuiltinTool for ListMcpResourceTemplatesTool {
    type Args = ListArgs;
    const NAME: &'static str = "list_mcp_resource_templates";

    fn description(&self) -> &'static str {
        "List the resource templates the MCP servers offer (URI patterns for resources made on \
         request), each with its server."
    }

    async fn run(&self, ctx: &ToolContext, args: ListArgs) -> Result<String, TurnStop> {
        Ok(list(ctx, args, Listing::Templates).await)
    }
}

impl BuiltinTool for ReadMcpResourceTool {
    type Args = ReadArgs;
    const NAME: &'static str = "read_mcp_resource";

    fn description(&self) -> &'static str {
        "Read one resource of an MCP server by its server name and URI."
    }

    async fn run(&self, ctx: &ToolContext, args: ReadArgs) -> Result<String, TurnStop> {
        Ok(read(ctx, args).await)
    }
}

/// Which listing a call wants.
#[derive(Clone, Copy)]
enum Listing {
    Resources,
    Templates,
}

/// Every server's resources (or templates) in one page, each tagged with its server; an
/// unknown server is named in the answer. Keel lists each server whole, so a cursor never
/// continues anything.
async fn list(ctx: &ToolContext, args: ListArgs, listing: Listing) -> String {
    if args.cursor.is_some() {
        return "there is no next page: every resource was listed at once".to_string();
    }
    let mcp = ctx.host.mcp_servers();
    let servers = match mcp.connected(args.server.as_deref()).await {
        Ok(servers) => servers,
        Err(err) => return err,
    };
    let mut listed = Vec::new();
    for (server, connection) in servers {
        let (resources, templates) = connection.resources().await;
        let items = match listing {
            Listing::Resources => resources,
            Listing::Templates => templates,
        };
        listed.extend(items.into_iter().map(|mut item| {
            if let Value::Object(object) = &mut item {
                object.insert("server".to_string(), json!(server));
            }
            item
        }));
    }
    let key = match listing {
        Listing::Resources => "resources",
        Listing::Templates => "resourceTemplates",
    };
    json!({ key: listed }).to_string()
}

/// The resource's contents as the server gave them, with the server and URI asked.
async fn read(ctx: &ToolContext, args: ReadArgs) -> String {
    let mcp = ctx.host.mcp_servers();
    let servers = match mcp.connected(Some(&args.server)).await {
        Ok(servers) => servers,
        Err(err) => return err,
    };
    let Some((_, connection)) = servers.first() else {
        return format!("MCP server `{}` is not running", args.server);
    };
    match connection.read_resource(&args.uri).await {
        Ok(Value::Object(mut read)) => {
            read.insert("server".to_string(), json!(args.server));
            read.insert("uri".to_string(), json!(args.uri));
            Value::Object(read).to_string()
        }
        Ok(other) => other.to_string(),
        Err(err) => format!("reading `{}` from `{}`: {err}", args.uri, args.server),
    }
}
