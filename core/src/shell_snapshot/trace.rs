//! Which files a login shell sourced while its snapshot was captured, read from the trace the
//! capture writes: bash's `xtrace` lines for `.` and `source`, zsh's `sourcetrace` lines.
//! Files sourced indirectly (a pyenv init, `/etc/profile.d/*.sh`) are in the trace too, so a
//! change to any of them invalidates the snapshot.

use std::path::PathBuf;

/// The files bash sourced: `+ . FILE` and `++ source FILE` lines of its trace (with the
/// default `PS4`; a profile that changes it hides its later lines).
pub(super) fn bash_sourced(trace: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for line in trace.lines() {
        let Some(rest) = line.strip_prefix('+') else {
            continue;
        };
        let rest = rest.trim_start_matches('+').trim_start();
        let Some(args) = rest
            .strip_prefix(". ")
            .or_else(|| rest.strip_prefix("source "))
        else {
            continue;
        };
        if let Some(file) = shlex::split(args).and_then(|words| words.into_iter().next()) {
            push_absolute(&mut files, file);
        }
    }
    files
}

/// The files zsh sourced: `+FILE:LINE> <sourcetrace>` lines (its startup files included).
pub(super) fn zsh_sourced(trace: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for line in trace.lines() {
        let Some(rest) = line
            .strip_prefix('+')
            .and_then(|rest| rest.strip_suffix("> <sourcetrace>"))
        else {
            continue;
        };
        if let Some((file, _line)) = rest.rsplit_once(':') {
            push_absolute(&mut files, file.to_string());
        }
    }
    files
}

/// Keeps absolute paths, once each (a relative one depends on where the shell was).
fn push_absolute(files: &mut Vec<PathBuf>, file: String) {
    let path = PathBuf::from(file);
    if path.is_absolute() && !files.contains(&path) {
        files.push(path);
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn bash_traces_name_every_sourced_file_once() {
        let trace = "+ . /home/u/.bashrc\n\
                     ++ PYENV_ROOT=/home/u/.pyenv\n\
                     ++ . '/home/u/my env.sh'\n\
                     ++ source /etc/profile.d/a.sh arg\n\
                     +++ . /home/u/.bashrc\n\
                     + . relative.sh\n\
                     + echo . /not/sourced\n";
        assert_eq!(
            bash_sourced(trace),
            [
                PathBuf::from("/home/u/.bashrc"),
                PathBuf::from("/home/u/my env.sh"),
                PathBuf::from("/etc/profile.d/a.sh"),
            ]
        );
    }

    #[test]
    fn zsh_sourcetrace_lines_name_the_files() {
        let trace = "+/etc/zsh/zshenv:1> <sourcetrace>\n\
                     +/home/u/.zprofile:1> <sourcetrace>\n\
                     +/home/u/.zprofile:3> export A=1\n\
                     +/home/u/x:y.zsh:1> <sourcetrace>\n";
        assert_eq!(
            zsh_sourced(trace),
            [
                PathBuf::from("/etc/zsh/zshenv"),
                PathBuf::from("/home/u/.zprofile"),
                PathBuf::from("/home/u/x:y.zsh"),
            ]
        );
    }
}
