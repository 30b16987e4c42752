//! The live agents of one top-level conversation, by task path (`/root`, `/root/worker`,
//! `/root/worker/tests`), each with a mailbox: the second generation of sub-agent tools names
//! agents by path, lets any agent message any other in its tree, and waits on the mailbox
//! rather than on named agents.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use keel_protocol::ConversationId;
use tokio::sync::Notify;

/// Something that arrived for an agent: a message, or another agent's news.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MailboxUpdate {
    /// The task path of the agent it is from.
    pub from: String,
    /// `message` for a message, else the sender's new status (`completed`, `errored`, …).
    pub kind: String,
}

/// One agent of the tree.
struct Member {
    id: ConversationId,
    /// When it joined, for listing in creation order.
    joined: u64,
    /// What arrived since the agent last waited.
    unread: Vec<MailboxUpdate>,
}

/// Every live agent of one tree, by path, and what arrived for each.
#[derive(Default)]
pub(crate) struct AgentTree {
    members: Mutex<BTreeMap<String, Member>>,
    /// How many agents ever joined.
    joins: std::sync::atomic::AtomicU64,
    /// Woken whenever anything arrives for anyone; a waiter checks its own mailbox.
    arrived: Notify,
}

impl AgentTree {
    fn members(&self) -> MutexGuard<'_, BTreeMap<String, Member>> {
        self.members
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Adds the agent `id` at `path`; `false` if a live agent holds the path.
    pub(crate) fn join(&self, path: &str, id: ConversationId) -> bool {
        let mut members = self.members();
        if members.get(path).is_some_and(|member| member.id != id) {
            return false;
        }
        let joined = self
            .joins
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        members.insert(
            path.to_string(),
            Member {
                id,
                joined,
                unread: Vec::new(),
            },
        );
        true
    }

    /// Removes the agent at `path`, if it is still `id`.
    pub(crate) fn leave(&self, path: &str, id: ConversationId) {
        let mut members = self.members();
        if members.get(path).is_some_and(|member| member.id == id) {
            members.remove(path);
        }
    }

    /// Whether a live agent holds `path`.
    pub(crate) fn holds(&self, path: &str) -> bool {
        self.members().contains_key(path)
    }

    /// The agent at `path`.
    pub(crate) fn id_at(&self, path: &str) -> Option<ConversationId> {
        self.members().get(path).map(|member| member.id)
    }

    /// The path of the agent `id`.
    pub(crate) fn path_of(&self, id: ConversationId) -> Option<String> {
        self.members()
            .iter()
            .find(|(_, member)| member.id == id)
            .map(|(path, _)| path.clone())
    }

    /// Every live agent whose path is `prefix` or below it, in the order they joined.
    pub(crate) fn list(&self, prefix: Option<&str>) -> Vec<(String, ConversationId)> {
        let members = self.members();
        let mut listed: Vec<(&String, &Member)> = members.iter().collect();
        listed.sort_by_key(|(_, member)| member.joined);
        listed
            .into_iter()
            .filter(|(path, _)| match prefix {
                None => true,
                Some(prefix) => {
                    path.as_str() == prefix
                        || path
                            .strip_prefix(prefix)
                            .is_some_and(|rest| rest.starts_with('/'))
                }
            })
            .map(|(path, member)| (path.clone(), member.id))
            .collect()
    }

    /// Leaves `update` in the mailbox of the agent at `path` (dropped if it is gone).
    pub(crate) fn post(&self, path: &str, update: MailboxUpdate) {
        if let Some(member) = self.members().get_mut(path) {
            member.unread.push(update);
        }
        self.arrived.notify_waiters();
    }

    /// Takes what arrived for the agent at `path`.
    pub(crate) fn take(&self, path: &str) -> Vec<MailboxUpdate> {
        self.members()
            .get_mut(path)
            .map(|member| std::mem::take(&mut member.unread))
            .unwrap_or_default()
    }

    /// Waits until something arrives for the agent at `path`, then takes it.
    pub(crate) async fn next(&self, path: &str) -> Vec<MailboxUpdate> {
        loop {
            // Registered before looking, so an update posted in between still wakes us.
            let arrived = self.arrived.notified();
            let updates = self.take(path);
            if !updates.is_empty() {
                return updates;
            }
            arrived.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_held_once_and_listed_by_prefix() {
        let tree = AgentTree::default();
        let (root, a, b) = (
            ConversationId::new(),
            ConversationId::new(),
            ConversationId::new(),
        );
        assert!(tree.join("/root", root));
        assert!(tree.join("/root/a", a));
        assert!(!tree.join("/root/a", b), "a live agent keeps its path");
        assert!(tree.join("/root/ab", b));
        let all: Vec<String> = tree.list(None).into_iter().map(|(path, _)| path).collect();
        assert_eq!(
            all,
            ["/root", "/root/a", "/root/ab"],
            "in the order they joined"
        );
        let under_a: Vec<String> = tree
            .list(Some("/root/a"))
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        assert_eq!(under_a, ["/root/a"]);
        assert_eq!(tree.list(None).len(), 3);
        tree.leave("/root/a", b);
        assert_eq!(
            tree.id_at("/root/a"),
            Some(a),
            "only its own agent frees a path"
        );
        tree.leave("/root/a", a);
        assert!(!tree.holds("/root/a"));
    }

    #[tokio::test]
    async fn a_waiter_gets_what_was_posted_for_it() {
        let tree = std::sync::Arc::new(AgentTree::default());
        tree.join("/root", ConversationId::new());
        let waiter = tokio::spawn({
            let tree = tree.clone();
            async move { tree.next("/root").await }
        });
        tree.post(
            "/root",
            MailboxUpdate {
                from: "/root/a".into(),
                kind: "completed".into(),
            },
        );
        let got = tokio::time::timeout(std::time::Duration::from_secs(10), waiter)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got[0].from, "/root/a");
        assert!(tree.take("/root").is_empty());
    }
}
