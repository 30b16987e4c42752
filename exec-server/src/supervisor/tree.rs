//! The live descendants of a process, read from `/proc`: every process whose chain of
//! parents leads to it.

use std::collections::HashMap;

/// A process of the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Descendant {
    /// Its process id.
    pub(super) pid: i32,
    /// Its process group.
    pub(super) pgid: i32,
}

/// The live descendants of `root` (zombies excluded), parents before children.
pub(super) fn descendants(root: i32) -> Vec<Descendant> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut children: HashMap<i32, Vec<Descendant>> = HashMap::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<i32>().ok())
        else {
            continue;
        };
        // A process may exit while the directory is read: skip what cannot be read.
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some((state, ppid, pgid)) = parse_stat(&stat)
            && state != 'Z'
        {
            children
                .entry(ppid)
                .or_default()
                .push(Descendant { pid, pgid });
        }
    }
    let mut tree = Vec::new();
    let mut next = vec![root];
    while let Some(parent) = next.pop() {
        for child in children.remove(&parent).unwrap_or_default() {
            next.push(child.pid);
            tree.push(child);
        }
    }
    tree
}

/// State, parent and process group from a `/proc/PID/stat` line. The command name (second
/// field) is in parentheses and may itself hold spaces and parentheses, so fields are
/// counted from the last `)`.
fn parse_stat(stat: &str) -> Option<(char, i32, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgid = fields.next()?.parse().ok()?;
    Some((state, ppid, pgid))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn parses_names_with_spaces_and_parentheses() {
        assert_eq!(
            parse_stat("4242 (we(ir) d)) S 17 4242 4242 0 -1 4194560 107 0 0 0"),
            Some(('S', 17, 4242))
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn finds_children_and_grandchildren_of_this_process() -> std::io::Result<()> {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .spawn()?;
        let child_pid = child.id().cast_signed();
        // The grandchild appears once the shell has forked it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let grandchildren = loop {
            let found = descendants(child_pid);
            if !found.is_empty() || std::time::Instant::now() > deadline {
                break found;
            }
            std::thread::yield_now();
        };
        let mine = descendants(std::process::id().cast_signed());
        for process in &grandchildren {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(process.pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        child.kill()?;
        child.wait()?;
        assert_eq!(grandchildren.len(), 1, "{grandchildren:?}");
        let pids: Vec<i32> = mine.iter().map(|d| d.pid).collect();
        assert!(pids.contains(&child_pid), "{mine:?}");
        assert!(pids.contains(&grandchildren[0].pid), "{mine:?}");
        Ok(())
    }
}
