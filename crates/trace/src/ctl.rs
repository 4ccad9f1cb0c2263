//! Controlling a running trace from another shell, like LSMPMON's securityfs
//! file: `lsmpmon trace ctl enable|disable|reset|dump`. The trace listens on a
//! Unix socket under /run/lsmpmon: the directory 0700 (made by lsmpmon, or
//! refused unless root's or ours and private), the socket 0600, and only root
//! or the trace's own user served (SO_PEERCRED). A client that sends nothing
//! or reads nothing is dropped after a fraction of a second.
use std::{
    fs,
    io::{Read, Write},
    os::fd::AsRawFd,
    os::unix::fs::{FileTypeExt, PermissionsExt},
    os::unix::net::{UnixListener, UnixStream},
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::{Context, Result};
use clap::ValueEnum;

use base::error::usage;
use base::secure_fs::{check_private, euid, private_dir};

pub const SOCKET_DIR: &str = "/run/lsmpmon";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Action {
    /// Start recording (again).
    Enable,
    /// Stop recording; statistics are kept.
    Disable,
    /// Zero every statistic.
    Reset,
    /// Print the statistics so far (the same table or JSON as at the end).
    Dump,
}

impl Action {
    fn word(self) -> &'static str {
        match self {
            Action::Enable => "enable",
            Action::Disable => "disable",
            Action::Reset => "reset",
            Action::Dump => "dump",
        }
    }

    pub fn parse(word: &str) -> Option<Self> {
        [Action::Enable, Action::Disable, Action::Reset, Action::Dump]
            .into_iter()
            .find(|a| a.word() == word)
    }
}

/// Waiting for a request line: an idle client is dropped after this.
const READ_DEADLINE: Duration = Duration::from_millis(100);
/// Writing a reply: a client that does not read loses it after this.
const WRITE_DEADLINE: Duration = Duration::from_millis(500);
/// The longest request line ("dump json" is 9 bytes).
const MAX_REQUEST: usize = 256;

pub fn socket_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("trace-{pid}.sock"))
}

/// The pid in a `trace-<pid>.sock` name.
fn socket_pid(path: &Path) -> Option<u32> {
    path.file_name()?
        .to_str()?
        .strip_prefix("trace-")?
        .strip_suffix(".sock")?
        .parse()
        .ok()
}

fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// The sockets in `dir`, each with its trace's pid.
fn sockets(dir: &Path) -> Vec<(PathBuf, u32)> {
    fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter_map(|p| socket_pid(&p).map(|pid| (p, pid)))
        .collect()
}

/// Removes the sockets of traces that died without removing theirs.
fn remove_stale(dir: &Path) {
    for (path, pid) in sockets(dir) {
        let is_socket = fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_socket());
        if is_socket && !alive(pid) {
            let _ = fs::remove_file(&path);
        }
    }
}

/// Who may control a trace: root, or the user the trace runs as.
pub fn peer_allowed(peer_uid: u32, own_uid: u32) -> bool {
    peer_uid == 0 || peer_uid == own_uid
}

/// The user id of the process at the other end (SO_PEERCRED).
fn peer_uid(stream: &UnixStream) -> Option<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: a valid socket and an out-buffer of the size given.
    let r = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(cred.uid)
}

/// The request line, if it arrives within READ_DEADLINE.
fn read_request(stream: &mut UnixStream) -> Option<String> {
    let end = Instant::now() + READ_DEADLINE;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 64];
    while !buf.contains(&b'\n') && buf.len() < MAX_REQUEST {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        stream.set_read_timeout(Some(left)).ok()?;
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// Writes as much of `bytes` as the client takes within `deadline`.
fn write_within(stream: &mut UnixStream, bytes: &[u8], deadline: Duration) {
    let end = Instant::now() + deadline;
    let mut rest = bytes;
    while !rest.is_empty() {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_write_timeout(Some(left)).is_err() {
            return;
        }
        match stream.write(rest) {
            Ok(0) => return,
            Ok(n) => rest = &rest[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// The listening side, owned by a running trace; removes its socket on drop.
pub struct Server {
    listener: UnixListener,
    path: PathBuf,
}

/// One request: the action and whether JSON was asked for.
pub struct Request {
    pub action: Action,
    pub json: bool,
    stream: UnixStream,
}

impl Request {
    /// Sends the reply; a client that does not read it is given up on.
    pub fn reply(mut self, text: &str) {
        write_within(&mut self.stream, text.as_bytes(), WRITE_DEADLINE);
    }
}

impl Server {
    /// Listens on /run/lsmpmon/trace-<pid>.sock.
    pub fn start() -> Result<Self> {
        Self::start_in(Path::new(SOCKET_DIR))
    }

    /// Listens in `dir`: made 0700 (or refused, see secure_fs), the socket 0600.
    pub fn start_in(dir: &Path) -> Result<Self> {
        private_dir(dir)?;
        remove_stale(dir);
        let path = socket_path(dir, std::process::id());
        let _ = fs::remove_file(&path);
        let listener = UnixListener::bind(&path)
            .with_context(|| format!("listening on {}", path.display()))?;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600))?;
        listener.set_nonblocking(true)?;
        Ok(Self { listener, path })
    }

    /// A pending request, if any: never blocks longer than READ_DEADLINE.
    pub fn poll(&self) -> Option<Request> {
        let (mut stream, _) = self.listener.accept().ok()?;
        stream.set_nonblocking(false).ok()?;
        if !peer_uid(&stream).is_some_and(|uid| peer_allowed(uid, euid())) {
            write_within(&mut stream, b"error: not allowed\n", READ_DEADLINE);
            return None;
        }
        let line = read_request(&mut stream)?;
        let mut words = line.split_whitespace();
        let action = words.next().and_then(Action::parse);
        let json = words.any(|w| w == "json");
        let Some(action) = action else {
            write_within(&mut stream, b"error: unknown action\n", READ_DEADLINE);
            return None;
        };
        Some(Request {
            action,
            json,
            stream,
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// The client: sends `action` to the trace with `pid` (or the only one running).
pub fn send(pid: Option<u32>, action: Action, json: bool) -> Result<String> {
    send_in(Path::new(SOCKET_DIR), pid, action, json)
}

/// The socket of the trace with `pid`, or of the only live one in `dir`.
fn pick(dir: &Path, pid: Option<u32>) -> Result<PathBuf> {
    if let Some(p) = pid {
        return Ok(socket_path(dir, p));
    }
    let live: Vec<(PathBuf, u32)> = sockets(dir).into_iter().filter(|s| alive(s.1)).collect();
    match live.as_slice() {
        [one] => Ok(one.0.clone()),
        [] => Err(usage(
            "no running lsmpmon trace found (start one with lsmpmon trace)",
        )),
        _ => Err(usage(format!(
            "{} traces are running: pick one with --pid ({})",
            live.len(),
            live.iter()
                .map(|s| s.1.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

pub fn send_in(dir: &Path, pid: Option<u32>, action: Action, json: bool) -> Result<String> {
    let path = pick(dir, pid)?;
    let mut stream = UnixStream::connect(&path).map_err(|e| {
        usage(format!(
            "cannot reach the trace at {}: {e} (is it still running?)",
            path.display()
        ))
    })?;
    // Only a directory nobody else controls holds a real trace's socket.
    check_private(dir)?;
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    writeln!(
        stream,
        "{}{}",
        action.word(),
        if json { " json" } else { "" }
    )?;
    stream.shutdown(std::net::Shutdown::Write)?;
    let mut reply = String::new();
    stream
        .read_to_string(&mut reply)
        .context("reading the trace's answer")?;
    if let Some(err) = reply.strip_prefix("error: ") {
        anyhow::bail!("trace answered: {}", err.trim());
    }
    if reply.is_empty() {
        anyhow::bail!("the trace gave no answer");
    }
    Ok(reply)
}

/// How long the client waits for the trace.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("lsmpmon-ctl-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    fn mode(p: &Path) -> u32 {
        fs::symlink_metadata(p).unwrap().mode() & 0o7777
    }

    /// Polls until a request comes (or `limit` passes).
    fn wait_request(server: &Server, limit: Duration) -> Option<Request> {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if let Some(r) = server.poll() {
                return Some(r);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        None
    }

    #[test]
    fn directory_is_0700_and_socket_0600_whatever_the_umask() {
        let dir = scratch("modes");
        // SAFETY: umask is process-wide; the old value is restored at once.
        let old = unsafe { libc::umask(0) };
        let server = Server::start_in(&dir);
        // SAFETY: as above.
        unsafe { libc::umask(old) };
        let server = server.unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&server.path), 0o600);
        drop(server);
        assert!(
            fs::read_dir(&dir).unwrap().next().is_none(),
            "socket removed"
        );
        fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn open_or_foreign_directories_are_refused() {
        let dir = scratch("open");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        let err = Server::start_in(&dir).err().expect("mode 0777 refused");
        assert!(
            err.to_string().contains("writable by group or others"),
            "{err}"
        );
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
        if euid() == 0 {
            std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
            let err = Server::start_in(&dir).err().expect("foreign owner refused");
            assert!(err.to_string().contains("belongs to uid 65534"), "{err}");
        } else {
            // Not root: no directory of another user can be made; ours is accepted.
            assert!(Server::start_in(&dir).is_ok());
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn idle_client_does_not_stall_poll() {
        let dir = scratch("idle");
        let server = Server::start_in(&dir).unwrap();
        let _idle = UnixStream::connect(&server.path).unwrap();
        let t = Instant::now();
        assert!(server.poll().is_none());
        let took = t.elapsed();
        assert!(took < Duration::from_millis(250), "poll took {took:?}");
        drop(server);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn client_that_never_reads_does_not_block_reply() {
        let dir = scratch("noread");
        let server = Server::start_in(&dir).unwrap();
        let mut c = UnixStream::connect(&server.path).unwrap();
        c.write_all(b"dump json\n").unwrap();
        let req = wait_request(&server, Duration::from_secs(2)).expect("request");
        assert!(req.json && req.action == Action::Dump);
        let t = Instant::now();
        req.reply(&"x".repeat(16 << 20));
        let took = t.elapsed();
        assert!(took < Duration::from_secs(1), "reply took {took:?}");
        drop(server);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stale_sockets_of_dead_traces_are_removed() {
        let dir = scratch("stale");
        base::secure_fs::private_dir(&dir).unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let stale = socket_path(&dir, dead);
        drop(UnixListener::bind(&stale).unwrap());
        let live = socket_path(&dir, 1);
        drop(UnixListener::bind(&live).unwrap());
        assert!(stale.exists());
        let server = Server::start_in(&dir).unwrap();
        assert!(!stale.exists(), "the dead trace's socket is removed");
        assert!(live.exists(), "a live process's socket is kept");
        drop(server);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn client_and_server_talk() {
        let dir = scratch("talk");
        let server = Server::start_in(&dir).unwrap();
        let d = dir.clone();
        let client = std::thread::spawn(move || send_in(&d, None, Action::Reset, false));
        let req = wait_request(&server, Duration::from_secs(5)).expect("request");
        assert_eq!(req.action, Action::Reset);
        req.reply("reset\n");
        assert_eq!(client.join().unwrap().unwrap(), "reset\n");
        drop(server);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn only_root_or_the_traces_user_is_served() {
        assert!(peer_allowed(0, 1000) && peer_allowed(1000, 1000));
        assert!(!peer_allowed(65534, 1000) && !peer_allowed(65534, 0));
        let dir = scratch("peer");
        let server = Server::start_in(&dir).unwrap();
        if euid() != 0 {
            // Not root: our own uid is served, through SO_PEERCRED.
            let mut c = UnixStream::connect(&server.path).unwrap();
            c.write_all(b"enable\n").unwrap();
            assert!(wait_request(&server, Duration::from_secs(2)).is_some());
        } else {
            // Even with the modes opened up, uid 65534 is refused by SO_PEERCRED.
            fs::set_permissions(&dir, fs::Permissions::from_mode(0o711)).unwrap();
            fs::set_permissions(&server.path, fs::Permissions::from_mode(0o666)).unwrap();
            let child = other_user_client(&server.path);
            let mut served = false;
            let status = loop {
                served |= server.poll().is_some();
                let mut st = 0;
                // SAFETY: our own child.
                if unsafe { libc::waitpid(child, &mut st, libc::WNOHANG) } == child {
                    break st;
                }
                std::thread::sleep(Duration::from_millis(5));
            };
            assert!(!served, "uid 65534 was served");
            assert!(libc::WIFEXITED(status), "{status:#x}");
            assert_eq!(
                libc::WEXITSTATUS(status),
                0,
                "0: connected and told 'not allowed'"
            );
        }
        drop(server);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A child that becomes uid 65534, connects, sends "dump" and exits 0 if
    /// the answer is "error: not allowed" (2: no connection, 3: another answer).
    fn other_user_client(path: &Path) -> libc::pid_t {
        use std::os::unix::ffi::OsStrExt;
        // SAFETY: zeroed sockaddr_un filled with a path shorter than sun_path.
        let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        for (d, s) in addr.sun_path.iter_mut().zip(path.as_os_str().as_bytes()) {
            *d = *s as libc::c_char;
        }
        let want = b"error: not allowed";
        // SAFETY: the child makes plain syscalls only, then _exit.
        unsafe {
            let pid = libc::fork();
            if pid != 0 {
                return pid;
            }
            let ok = libc::setgroups(0, std::ptr::null()) == 0
                && libc::setgid(65534) == 0
                && libc::setuid(65534) == 0;
            let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
            let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
            if !ok || libc::connect(fd, (&addr as *const libc::sockaddr_un).cast(), len) != 0 {
                libc::_exit(2);
            }
            libc::write(fd, b"dump\n".as_ptr().cast(), 5);
            let mut buf = [0u8; 64];
            let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            let same = n >= want.len() as isize && buf[..want.len()] == want[..];
            libc::_exit(if same { 0 } else { 3 });
        }
    }
}
