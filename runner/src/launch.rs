//! The launcher that `runner programs` starts each program through, so that the peak
//! resident memory it reports is the program's own.
//!
//! `wait4`'s `ru_maxrss` for a child is the high-water mark of the child's process,
//! and Linux's `exec` carries into it the high-water mark of the memory the process
//! had before the `exec` (`exec_mmap` stores the old mm's into the signal struct's
//! `maxrss`). A program forked (or vforked: `posix_spawn`) from the runner therefore
//! reads at least the runner's own resident memory, about 12 MB, whatever it used
//! itself. So the runner starts a fresh `exec` of its own binary in a hidden mode,
//! [`ARG`] (handled at the very top of `main`, before anything else of the runner
//! runs, so it stays a few MB), and that launcher forks and execs the program, waits
//! for it with `wait4` and writes what it reported into a report file; the program's
//! figure can then fall no lower than the launcher's resident memory at the fork.
//!
//! `runner __launch REPORT PROGRAM [ARGS...]` starts `PROGRAM ARGS...` with the
//! launcher's working directory, standard streams and environment, except that
//! [`PRELOAD_ENV`], when set, becomes the program's `LD_PRELOAD` (so the launcher
//! itself never runs under the allocator being measured). The program dies with the
//! launcher (`PR_SET_PDEATHSIG`). When the program ends the launcher writes REPORT
//! whole (a `.part` file renamed into place) and exits with the program's exit code,
//! or 128 plus the signal that ended it. [`Launch`] is the runner's side.

use crate::lab::error::{Error, Result};
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode};

/// The hidden first argument that makes the runner binary a launcher; it never shows
/// in `runner --help` (clap never sees it).
pub const ARG: &str = "__launch";

/// The environment variable that carries the program's `LD_PRELOAD` to the launcher.
pub const PRELOAD_ENV: &str = "HANDOFF_LAUNCH_PRELOAD";

/// How the program ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// It exited with this status.
    Exit(i32),
    /// A signal with this number ended it.
    Signal(i32),
}

impl End {
    /// Whether it exited with status 0.
    pub fn success(self) -> bool {
        self == End::Exit(0)
    }

    /// The launcher's own exit status for it: the program's exit status, or 128 plus
    /// the signal's number.
    pub fn code(self) -> u8 {
        match self {
            End::Exit(c) => c.clamp(0, 255) as u8,
            End::Signal(s) => (128 + s).clamp(0, 255) as u8,
        }
    }
}

impl fmt::Display for End {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            End::Exit(c) => write!(f, "exit status {c}"),
            End::Signal(s) => write!(f, "signal {s}"),
        }
    }
}

/// What `wait4` reported to the launcher for the program's process.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Report {
    /// How it ended.
    pub end: End,
    /// Its peak resident memory, bytes (`ru_maxrss`, which Linux gives in KiB, times
    /// 1024).
    pub peak_bytes: u64,
    /// Its user CPU time, seconds.
    pub user_s: f64,
    /// Its system CPU time, seconds.
    pub system_s: f64,
}

impl Report {
    /// User plus system CPU time, seconds.
    pub fn cpu_s(&self) -> f64 {
        self.user_s + self.system_s
    }

    /// The report file's text.
    fn to_text(self) -> String {
        let end = match self.end {
            End::Exit(c) => format!("exit {c}"),
            End::Signal(s) => format!("signal {s}"),
        };
        format!(
            "end {end}\npeak_bytes {}\nuser_s {}\nsystem_s {}\n",
            self.peak_bytes, self.user_s, self.system_s
        )
    }

    /// A report file's text: the report, or the launcher's own error (the program did
    /// not start) as `Ok(Err(message))`; `Err` for text that is neither.
    fn parse(text: &str) -> std::result::Result<std::result::Result<Report, String>, String> {
        if let Some(e) = text.strip_prefix("error ") {
            return Ok(Err(e.trim_end().to_string()));
        }
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
                .ok_or_else(|| format!("no {name} line"))
        };
        let number = |name: &str| -> std::result::Result<f64, String> {
            field(name)?.parse().map_err(|e| format!("{name}: {e}"))
        };
        let end = field("end")?;
        let end = match end.split_once(' ') {
            Some(("exit", c)) => End::Exit(c.parse().map_err(|e| format!("end: {e}"))?),
            Some(("signal", s)) => End::Signal(s.parse().map_err(|e| format!("end: {e}"))?),
            _ => return Err(format!("end: `{end}`")),
        };
        Ok(Ok(Report {
            end,
            peak_bytes: field("peak_bytes")?
                .parse()
                .map_err(|e| format!("peak_bytes: {e}"))?,
            user_s: number("user_s")?,
            system_s: number("system_s")?,
        }))
    }
}

/// The launcher's entry: `Some(exit status)` when this process was started as one
/// (its first argument is [`ARG`]), after the program it started has ended; `None`
/// otherwise. `main` calls it before anything else.
pub fn entry() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(ARG)) {
        return None;
    }
    Some(launcher(args))
}

/// Starts the program, waits for it, writes the report; the program's exit status.
fn launcher(mut args: impl Iterator<Item = OsString>) -> ExitCode {
    let (Some(report), Some(program)) = (args.next(), args.next()) else {
        eprintln!(
            "runner {ARG}: needs REPORT PROGRAM [ARGS...] (the programs experiment starts it)"
        );
        return ExitCode::from(2);
    };
    let mut c = Command::new(&program);
    c.args(args);
    if let Some(p) = std::env::var_os(PRELOAD_ENV) {
        c.env_remove(PRELOAD_ENV).env("LD_PRELOAD", p);
    }
    // SAFETY: `getpid` has no preconditions.
    let me = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the forked child before `exec` and only makes two
    // async-signal-safe system calls (`prctl`, `getppid`); it allocates nothing and
    // takes no lock.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut c, move || die_with(me));
    }
    let outcome = match c.spawn() {
        Ok(child) => wait(child.id() as libc::pid_t),
        Err(e) => Err(format!(
            "cannot start {}: {e}",
            Path::new(&program).display()
        )),
    };
    let text = match &outcome {
        Ok(r) => r.to_text(),
        Err(e) => format!("error {e}\n"),
    };
    let report = PathBuf::from(report);
    let mut part = report.clone().into_os_string();
    part.push(".part");
    if let Err(e) = std::fs::write(&part, text).and_then(|()| std::fs::rename(&part, &report)) {
        eprintln!("runner {ARG}: cannot write {}: {e}", report.display());
        return ExitCode::from(125);
    }
    match outcome {
        Ok(r) => ExitCode::from(r.end.code()),
        Err(e) => {
            eprintln!("runner {ARG}: {e}");
            ExitCode::from(127)
        }
    }
}

/// In the program's child, before `exec`: asks for SIGKILL when the launcher (`me`)
/// dies, and fails if it has died already (the request would then never fire).
fn die_with(me: libc::pid_t) -> std::io::Result<()> {
    let (signal, unused): (libc::c_ulong, libc::c_ulong) = (libc::SIGKILL as _, 0);
    // SAFETY: `prctl(PR_SET_PDEATHSIG, signal)` reads no memory of ours; the variadic
    // arguments are passed as the `unsigned long`s the kernel reads.
    let r = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, signal, unused, unused, unused) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `getppid` has no preconditions.
    if unsafe { libc::getppid() } != me {
        return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(())
}

/// Waits for the child `pid` with `wait4`, which reports its own resource usage (the
/// standard library's `wait` discards it).
fn wait(pid: libc::pid_t) -> std::result::Result<Report, String> {
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is this process's child, not yet reaped (its `Child` is never
        // waited on); `status` and `ru` are valid for writes.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(format!("wait4: {e}"));
        }
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Ok(Report {
        end: if libc::WIFEXITED(status) {
            End::Exit(libc::WEXITSTATUS(status))
        } else {
            End::Signal(libc::WTERMSIG(status))
        },
        // Linux reports KiB.
        peak_bytes: ru.ru_maxrss.max(0) as u64 * 1024,
        user_s: secs(ru.ru_utime),
        system_s: secs(ru.ru_stime),
    })
}

/// The launcher binary: this one (`runner` and `runner-contenders` both handle
/// [`ARG`] first thing in `main`).
pub fn this_binary() -> Result<PathBuf> {
    std::env::current_exe().map_err(|e| {
        Error::Run(format!(
            "cannot find the runner binary, which launches the programs: {e}"
        ))
    })
}

/// The runner's side: a program to start through a launcher, and its report.
pub struct Launch {
    command: Command,
    report: PathBuf,
    _dir: tempfile::TempDir,
}

impl Launch {
    /// The launcher `launcher` (a binary whose `main` calls [`entry`] first) set to
    /// start `program`: its program, arguments, working directory and environment
    /// changes, with `LD_PRELOAD` passed as [`PRELOAD_ENV`] (an `env_remove` of
    /// `LD_PRELOAD` removes it from both). `program`'s standard streams are not
    /// readable: set them on [`Launch::command`], which the program inherits; nor is
    /// an `env_clear`, which is not carried over. Fails if no folder for the report
    /// can be made.
    pub fn new(launcher: &Path, program: &Command) -> std::io::Result<Launch> {
        let dir = tempfile::Builder::new()
            .prefix("handoff-launch")
            .tempdir()?;
        let report = dir.path().join("report");
        let mut c = Command::new(launcher);
        c.arg(ARG)
            .arg(&report)
            .arg(program.get_program())
            .args(program.get_args())
            .env_remove(PRELOAD_ENV);
        if let Some(d) = program.get_current_dir() {
            c.current_dir(d);
        }
        // The launcher dies with the runner (a runner killed or timed out must not leave
        // a redis-server running beside the next experiments); the program dies with
        // the launcher. The caller waits for the launcher on the thread that spawns it.
        // SAFETY: `getpid` has no preconditions.
        let runner = unsafe { libc::getpid() };
        // SAFETY: as in `launcher`: the closure makes two async-signal-safe system calls
        // in the forked child, allocates nothing and takes no lock.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut c, move || die_with(runner));
        }
        for (k, v) in program.get_envs() {
            match (k == "LD_PRELOAD", v) {
                (true, Some(v)) => c.env(PRELOAD_ENV, v),
                (true, None) => c.env_remove(k).env_remove(PRELOAD_ENV),
                (false, Some(v)) => c.env(k, v),
                (false, None) => c.env_remove(k),
            };
        }
        Ok(Launch {
            command: c,
            report,
            _dir: dir,
        })
    }

    /// The launcher's command: set its standard streams here, then spawn it.
    pub fn command(&mut self) -> &mut Command {
        &mut self.command
    }

    /// Waits for the spawned launcher `child` and reads its report on the program
    /// (`who` in messages). A program that did not start, and a launcher that ended
    /// without a report (killed: the program was killed with it), are errors.
    pub fn finish(self, child: &mut Child, who: &str) -> Result<Report> {
        let status = child
            .wait()
            .map_err(|e| Error::Run(format!("{who}: waiting for its launcher: {e}")))?;
        let text = match std::fs::read_to_string(&self.report) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                use std::os::unix::process::ExitStatusExt;
                let why = if status.signal().is_some() {
                    "the launcher was killed, and the program with it"
                } else {
                    "the launcher could not write it: its message is above"
                };
                return Err(Error::Run(format!(
                    "{who}: its launcher ended ({status}) without a report, so the program's \
                     CPU time and peak memory are unknown ({why})"
                )));
            }
            Err(e) => {
                return Err(Error::Run(format!(
                    "{who}: cannot read its launcher's report {}: {e}",
                    self.report.display()
                )))
            }
        };
        match Report::parse(&text) {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(Error::Run(format!("{who} did not start: {e}"))),
            Err(e) => Err(Error::Run(format!(
                "{who}: its launcher's report is unreadable ({e}): {text:?}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_reads_back_as_written() {
        for end in [End::Exit(0), End::Exit(7), End::Signal(9)] {
            let r = Report {
                end,
                peak_bytes: 3_456 * 1024,
                user_s: 0.1 + 0.2,
                system_s: 1e-6,
            };
            assert_eq!(Report::parse(&r.to_text()), Ok(Ok(r)));
        }
        assert_eq!(
            Report::parse("error cannot start x: No such file\n"),
            Ok(Err("cannot start x: No such file".to_string()))
        );
        assert!(Report::parse("end exit 0\npeak_bytes 1\nuser_s 0\n").is_err());
        assert!(Report::parse("end stopped 3\npeak_bytes 1\nuser_s 0\nsystem_s 0\n").is_err());
        assert!(Report::parse("").is_err());
    }

    #[test]
    fn exit_codes_are_the_programs_or_128_plus_the_signal() {
        assert_eq!(End::Exit(0).code(), 0);
        assert_eq!(End::Exit(7).code(), 7);
        assert_eq!(End::Signal(9).code(), 137);
        assert!(End::Exit(0).success());
        assert!(!End::Exit(1).success() && !End::Signal(15).success());
        assert_eq!(End::Signal(9).to_string(), "signal 9");
        assert_eq!(End::Exit(3).to_string(), "exit status 3");
    }

    #[test]
    fn ld_preload_goes_to_the_program_only() {
        let mut p = Command::new("/bin/prog");
        p.arg("a")
            .arg("b c")
            .current_dir("/tmp")
            .env("LD_PRELOAD", "/lib/x.so")
            .env("KEEP", "1")
            .env_remove("GONE");
        let l = Launch::new(Path::new("/bin/runner"), &p).unwrap();
        let c = &l.command;
        assert_eq!(c.get_program(), "/bin/runner");
        let args: Vec<&OsStr> = c.get_args().collect();
        assert_eq!(args[0], ARG);
        assert_eq!(args[1], l.report.as_os_str());
        assert_eq!(&args[2..], ["/bin/prog", "a", "b c"]);
        assert_eq!(c.get_current_dir(), Some(Path::new("/tmp")));
        let envs: Vec<(&OsStr, Option<&OsStr>)> = c.get_envs().collect();
        assert!(envs.contains(&(OsStr::new(PRELOAD_ENV), Some(OsStr::new("/lib/x.so")))));
        assert!(envs.contains(&(OsStr::new("KEEP"), Some(OsStr::new("1")))));
        assert!(envs.contains(&(OsStr::new("GONE"), None)));
        assert!(!envs.iter().any(|(k, v)| *k == "LD_PRELOAD" && v.is_some()));
        // Without LD_PRELOAD, a stray PRELOAD_ENV of the runner's is not passed on.
        let l = Launch::new(Path::new("/bin/runner"), &Command::new("/bin/prog")).unwrap();
        assert!(l
            .command
            .get_envs()
            .any(|(k, v)| k == PRELOAD_ENV && v.is_none()));
    }
}
