//! Notices beside the items: a stream error being retried, changed skills, hook runs and
//! warnings.

use keel_protocol::EventMsg;
use keel_protocol::app_server::ServerNotification;

use super::{Output, Translator};

impl Translator {
    /// Maps one of its events; other events give nothing.
    pub(super) fn notices(&mut self, msg: &EventMsg) -> Vec<Output> {
        let thread_id = self.thread_id.clone();
        let mut out = Vec::new();
        match msg {
            EventMsg::StreamError(notice) => out.push(self.error(&notice.message, None, true)),
            EventMsg::SkillsChanged(_) => {
                out.push(Output::notify(ServerNotification::SkillsChanged(
                    keel_protocol::app_server::SkillsChangedNotification {},
                )));
            }
            EventMsg::HookStarted(event) => {
                out.push(Output::notify(ServerNotification::HookStarted(
                    keel_protocol::app_server::HookRunNotification {
                        thread_id,
                        turn_id: event.turn_id.clone(),
                        run: event.run.clone(),
                    },
                )));
            }
            EventMsg::HookCompleted(event) => {
                out.push(Output::notify(ServerNotification::HookCompleted(
                    keel_protocol::app_server::HookRunNotification {
                        thread_id,
                        turn_id: event.turn_id.clone(),
                        run: event.run.clone(),
                    },
                )));
            }
            EventMsg::Warning(warning) => {
                out.push(Output::notify(ServerNotification::Warning(
                    keel_protocol::app_server::WarningNotification {
                        message: warning.message.clone(),
                        thread_id: Some(thread_id),
                    },
                )));
            }
            _ => {}
        }
        out
    }
}
