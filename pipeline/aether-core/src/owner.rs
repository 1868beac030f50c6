//! Which process owns a record of the job history, and whether it still lives.
//!
//! A run being followed, a cluster being created and a job being tuned carry the *owner* that
//! does it: `host:pid:start`, where `start` is the process's start time in clock ticks since
//! boot (`/proc/<pid>/stat`, field 22), so that a pid reused by another process after a crash
//! is not taken for the owner. A record whose owner is gone is an orphan: reconciliation brings
//! it up to the platform's truth, and a job lock it held is taken over.
//!
//! Also the crash points the chaos tests use: `AETHER_CRASH_POINT=<name>` kills this process
//! with SIGKILL when it reaches [`crash_point`]`(name)` (a boundary such as "after the platform
//! answered, before the history recorded it", which no timing can hit reliably).

use std::time::Duration;

/// The owner string of this process (`host:pid:start`).
pub fn me() -> String {
    let pid = std::process::id();
    format!("{}:{pid}:{}", host(), start_ticks(pid).unwrap_or(0))
}

/// This machine's host name (`gethostname`), `localhost` when it has none.
pub fn host() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates within it or
    // truncates (we cut at the first NUL either way)
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let name = if rc == 0 {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    } else {
        String::new()
    };
    if name.is_empty() {
        "localhost".into()
    } else {
        name.replace(':', "_")
    }
}

/// A process's start time in clock ticks since boot, from `/proc/<pid>/stat` (None: no such
/// process, or no /proc).
pub fn start_ticks(pid: u32) -> Option<u64> {
    start_of_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The start time in a `/proc/<pid>/stat` line.
fn start_of_stat(stat: &str) -> Option<u64> {
    // "pid (comm) state ppid …": comm may hold spaces and parentheses; fields follow the last ')'
    let rest = &stat[stat.rfind(')')? + 1..];
    // rest starts at field 3 (state); starttime is field 22
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// The parts of an owner string: (host, pid, start).
pub fn parse(owner: &str) -> Option<(&str, u32, u64)> {
    let mut it = owner.rsplitn(3, ':');
    let start = it.next()?.parse().ok()?;
    let pid = it.next()?.parse().ok()?;
    Some((it.next()?, pid, start))
}

/// How long a record owned by a process of another host counts as owned without an update:
/// aether cannot see that host's processes (longer than the default 6 h step timeout).
pub const FOREIGN_OWNER_TTL: Duration = Duration::from_secs(12 * 3600);

/// Whether `owner` still lives: on this host, a process with its pid and start time; on another
/// host, a record updated within [`FOREIGN_OWNER_TTL`] (`age`: since the record's last update).
pub fn alive(owner: &str, age: Duration) -> bool {
    let Some((h, pid, start)) = parse(owner) else {
        return false;
    };
    if h != host() {
        return age < FOREIGN_OWNER_TTL;
    }
    if !std::path::Path::new("/proc/self/stat").exists() {
        // no /proc (not Linux): a process with this pid is taken for the owner (signal 0
        // reaches it, or it exists under another user)
        // SAFETY: signal 0 checks for the process, sends nothing
        let rc = unsafe { libc::kill(pid as i32, 0) };
        return rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    }
    match start_ticks(pid) {
        // recorded without a start time: any process with this pid
        Some(_) if start == 0 => true,
        Some(s) => s == start,
        None => false,
    }
}

/// In the chaos tests: SIGKILL this process here when `AETHER_CRASH_POINT` names this point
/// (nothing otherwise). The names are listed in docs/crash-safety.md.
pub fn crash_point(name: &str) {
    if std::env::var("AETHER_CRASH_POINT").is_ok_and(|p| p == name) {
        // SAFETY: a signal to this process; SIGKILL cannot be caught, as a crash
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
        // SIGKILL is delivered before kill returns to a single-threaded caller, and at once to
        // a multi-threaded one; never go on past a crash point
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_lives_and_a_dead_or_reused_pid_does_not() {
        let me = me();
        let (h, pid, start) = parse(&me).unwrap();
        assert_eq!(h, host());
        assert_eq!(pid, std::process::id());
        assert!(start > 0, "{me}");
        assert!(alive(&me, Duration::ZERO));
        // the same pid with another start time: a reused pid, not the owner
        assert!(!alive(&format!("{h}:{pid}:{}", start + 1), Duration::ZERO));
        // a child that has exited and been reaped
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let cpid = c.id();
        c.wait().unwrap();
        assert!(!alive(&format!("{h}:{cpid}:1"), Duration::ZERO));
        // another host: owned until the record is older than the TTL
        assert!(alive("elsewhere:1:1", Duration::from_secs(60)));
        assert!(!alive("elsewhere:1:1", FOREIGN_OWNER_TTL));
        assert!(!alive("garbage", Duration::ZERO));
        assert_eq!(parse("a:b:c:12:34"), Some(("a:b:c", 12, 34)));
    }

    #[test]
    fn start_time_of_a_process_whose_name_has_spaces_and_parentheses() {
        let line =
            "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(start_of_stat(line), Some(987654));
        assert_eq!(start_of_stat("4242 (cut"), None);
        assert_eq!(start_of_stat("4242 (x) S 1 2"), None);
    }
}
