//! Request handlers, one module per resource: threads and turns, and the methods that involve
//! no thread (`fs/*`, `command/exec*`, `model/list`, `config/*`, `mcpServerStatus/list`, the
//! start-up questions of Codex clients).
//!
//! Each module says what its methods do with one `handle!` line per method, next to the code
//! it calls; [`dispatch`] hands a request to the handler its method has. The method table
//! (`ClientRequest`) requires a handler for every method it lists, so adding a method takes
//! its types and table line in keel-protocol and one `handle!` line here.

/// Declares what one method does: `handle!(Variant, |ctx, params| body)`, where `ctx` is the
/// request's [`Ctx`] and `body` gives a `Result<Reply>` (it may `.await` and `?`).
macro_rules! handle {
    ($method:ident, |$ctx:pat_param, $params:pat_param| $body:expr) => {
        impl<'a> keel_protocol::Handles<keel_protocol::app_server::client_request::$method>
            for crate::handlers::Ctx<'a>
        {
            fn handle(
                self,
                $params: <keel_protocol::app_server::client_request::$method as keel_protocol::RpcRequest>::Params,
            ) -> crate::handlers::Handled<'a> {
                #[allow(unused_imports, reason = "not every body builds a reply itself")]
                use crate::handlers::Reply;
                let $ctx = self;
                Box::pin(async move { $body })
            }
        }
    };
}

mod account_login;
mod added_environments;
mod asked_dirs;
mod client_setup;
mod command_exec;
mod config_write;
mod environments;
mod external_import;
mod feedback;
mod file_search;
mod fs;
mod fs_watch;
mod goals;
mod guardian_override;
mod hooks;
mod info;
mod inject_items;
mod loaded;
mod mcp_oauth;
mod mcp_status;
mod model_list;
mod model_providers;
mod paths;
mod plugins;
mod read_state;
mod reply;
mod revert;
mod review;
mod settings;
mod settings_change;
mod shell_command;
mod skills;
mod thread_attachments;
mod thread_list;
mod thread_list_filter;
mod thread_metadata;
mod thread_queue;
mod thread_sections;
mod thread_status;
mod threads;
mod turns;
mod unoffered;
mod workspace_settings;

use std::sync::Arc;

use futures::future::BoxFuture;
use keel_protocol::RequestHandler;
use keel_protocol::app_server::ClientRequest;

use crate::error::Result;
use crate::outgoing::Outgoing;
use crate::state::AppState;
pub(crate) use added_environments::AddedEnvironments;
pub(crate) use command_exec::{CommandExecs, RemoteExecServer};
pub(crate) use file_search::FileSearches;
pub(crate) use fs_watch::FsWatches;
pub(crate) use reply::Reply;

/// What a handler may use of its connection.
pub(crate) struct ConnectionContext {
    pub outgoing: Arc<Outgoing>,
    pub execs: CommandExecs,
    pub file_searches: FileSearches,
    pub fs_watches: FsWatches,
}

/// What one request's handler works with: the server and the connection it came on.
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'a> {
    pub state: &'a AppState,
    pub connection: &'a ConnectionContext,
}

impl<'a> Ctx<'a> {
    /// Where this connection's notifications and server requests go.
    fn outgoing(&self) -> &'a Arc<Outgoing> {
        &self.connection.outgoing
    }
}

/// What a handler gives: the reply, once the work it waits for is done.
pub(crate) type Handled<'a> = BoxFuture<'a, Result<Reply>>;

impl<'a> RequestHandler for Ctx<'a> {
    type Output = Handled<'a>;
}

/// Runs one request (`initialize` is answered before, and refused here).
pub(crate) async fn dispatch(
    state: &AppState,
    connection: &ConnectionContext,
    request: ClientRequest,
) -> Result<Reply> {
    request.dispatch(Ctx { state, connection }).await
}
