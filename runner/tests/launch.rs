//! The programs experiment's launcher (`runner __launch`, `runner::launch`) end to end,
//! through the runner binary and the same `Launch` the experiment uses: the peak
//! resident memory it reports is the program's own (not the memory of the process
//! that started it), exit statuses and signals are reported as such, `LD_PRELOAD`
//! reaches the program and not the launcher, the program dies with the launcher, and
//! the hidden mode does not show in `--help`.

use runner::launch::{End, Launch, Report, ARG, PRELOAD_ENV};
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const MIB: u64 = 1 << 20;

fn runner_bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_runner"))
}

/// What one launch gave: the report (or the error), the launcher's exit code, and the
/// program's stdout and stderr (inherited from the launcher).
struct Ran {
    report: runner::lab::error::Result<Report>,
    code: Option<i32>,
    out: String,
    err: String,
}

/// Starts `program` through the runner binary as `timed` does, feeds it `input`, and
/// waits for the report.
fn launch(program: &Command, input: &[u8]) -> Ran {
    let mut l = Launch::new(runner_bin(), program).expect("a folder for the report");
    let mut child = l
        .command()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the runner as a launcher");
    let mut stdin = child.stdin.take().unwrap();
    let _ = stdin.write_all(input);
    drop(stdin);
    let (out, err) = drain(&mut child);
    let report = l.finish(&mut child, "the test program");
    let code = child.wait().unwrap().code();
    Ran {
        report,
        code,
        out,
        err,
    }
}

fn drain(child: &mut Child) -> (String, String) {
    let mut e = child.stderr.take().unwrap();
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = e.read_to_string(&mut s);
        s
    });
    let mut out = String::new();
    let _ = child.stdout.take().unwrap().read_to_string(&mut out);
    (out, err.join().unwrap())
}

fn sh(script: &str) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c").arg(script);
    c
}

/// This process's resident memory, bytes (`VmRSS` of /proc/self/status).
fn own_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status");
    kib * 1024
}

/// A C program that allocates `argv[1]` bytes, writes every page, and exits with
/// `argv[2]`; compiled once with `$CC` (default `cc`) into a folder of the target.
fn toucher() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("launch-toucher");
            std::fs::create_dir_all(&dir).unwrap();
            let src = dir.join("toucher.c");
            let exe = dir.join("toucher");
            std::fs::write(
                &src,
                "#include <stdlib.h>\n\
                 int main(int argc, char **argv) {\n\
                 \x20   size_t n = strtoull(argv[1], 0, 10);\n\
                 \x20   volatile char *p = malloc(n);\n\
                 \x20   if (!p) return 99;\n\
                 \x20   for (size_t i = 0; i < n; i += 4096) p[i] = 1;\n\
                 \x20   return atoi(argv[2]);\n\
                 }\n",
            )
            .unwrap();
            let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
            let out = Command::new(&cc)
                .arg("-O1")
                .arg("-o")
                .arg(&exe)
                .arg(&src)
                .output()
                .unwrap_or_else(|e| panic!("this test needs a C compiler ({cc:?}): {e}"));
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            exe
        })
        .clone()
}

#[test]
fn a_small_program_reads_its_own_peak_not_its_starters() {
    // This process makes itself large first: 256 MiB written page by page, alive
    // while the program runs. A program forked from it would read at least that.
    let mut big = vec![0u8; (256 * MIB) as usize];
    for i in (0..big.len()).step_by(4096) {
        big[i] = 1;
    }
    let big = std::hint::black_box(big);
    let rss = own_rss();
    assert!(rss >= 256 * MIB, "the test's own RSS is only {rss} bytes");
    let ran = launch(&sh("exit 0"), b"");
    let r = ran.report.unwrap();
    assert_eq!(r.end, End::Exit(0));
    assert!(r.peak_bytes > 0, "no peak measured");
    assert!(
        r.peak_bytes < rss / 4,
        "`sh -c 'exit 0'` read a peak of {} bytes, not far below the {rss} of the process that started it",
        r.peak_bytes
    );
    // The launcher stays a few MB, and so does the floor it puts on the figure.
    assert!(
        r.peak_bytes < 16 * MIB,
        "`sh -c 'exit 0'` read a peak of {} bytes",
        r.peak_bytes
    );
    drop(big);
}

#[test]
fn a_program_that_touches_64_mib_reads_at_least_that() {
    let mut c = Command::new(toucher());
    c.arg((64 * MIB).to_string()).arg("0");
    let r = launch(&c, b"").report.unwrap();
    assert_eq!(r.end, End::Exit(0));
    assert!(
        (64 * MIB..64 * MIB + 16 * MIB).contains(&r.peak_bytes),
        "a program that touched 64 MiB read a peak of {} bytes",
        r.peak_bytes
    );
    assert!(r.cpu_s() >= 0.0 && r.cpu_s() < 10.0);
    // And the small one beside it, from the same (small) test process, reads less.
    let mut small = Command::new(toucher());
    small.arg((MIB).to_string()).arg("0");
    let s = launch(&small, b"").report.unwrap();
    assert!(
        s.peak_bytes < 32 * MIB,
        "a program that touched 1 MiB read a peak of {} bytes",
        s.peak_bytes
    );
}

#[test]
fn exit_status_and_signal_are_reported_as_such() {
    let ran = launch(
        &sh("read x; echo \"got $x\"; echo err >&2; exit 7"),
        b"in\n",
    );
    assert_eq!(ran.report.unwrap().end, End::Exit(7));
    assert_eq!(
        ran.code,
        Some(7),
        "the launcher exits with the program's status"
    );
    assert_eq!(ran.out, "got in\n", "stdin and stdout pass through");
    assert_eq!(ran.err, "err\n", "stderr passes through");

    let ran = launch(&sh("kill -KILL $$"), b"");
    let r = ran.report.unwrap();
    assert_eq!(r.end, End::Signal(9));
    assert!(!r.end.success());
    assert_eq!(ran.code, Some(128 + 9));

    let mut c = Command::new(toucher());
    c.arg("4096").arg("3");
    let ran = launch(&c, b"");
    assert_eq!(ran.report.unwrap().end, End::Exit(3));
    assert_eq!(ran.code, Some(3));

    let ran = launch(&Command::new("/nonexistent/program"), b"");
    let e = ran.report.unwrap_err().to_string();
    assert!(
        e.contains("did not start") && e.contains("/nonexistent/program"),
        "{e}"
    );
    assert_eq!(ran.code, Some(127));
}

#[test]
fn ld_preload_reaches_the_program_and_not_the_launcher() {
    // A library that does not exist: the loader warns and goes on without it.
    let lib = "/nonexistent/libhandoff-test.so";
    let mut c = sh("echo \"program=$LD_PRELOAD\"; \
         tr '\\0' '\\n' < /proc/$PPID/environ | grep -E '^(LD_PRELOAD|HANDOFF_LAUNCH_PRELOAD)=' | sed 's/^/launcher:/'; \
         echo \"cwd=$(pwd)\"; echo \"keep=$KEEP_ME\"");
    c.env("LD_PRELOAD", lib)
        .env("KEEP_ME", "kept")
        .current_dir("/");
    let ran = launch(&c, b"");
    assert_eq!(ran.report.unwrap().end, End::Exit(0));
    assert_eq!(
        ran.out,
        format!("program={lib}\nlauncher:{PRELOAD_ENV}={lib}\ncwd=/\nkeep=kept\n"),
        "stderr: {}",
        ran.err
    );
}

#[test]
fn the_program_dies_with_its_launcher_and_the_missing_report_is_an_error() {
    let program = sh("echo $$; exec sleep 60");
    let mut l = Launch::new(runner_bin(), &program).unwrap();
    let mut child = l
        .command()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let pid: u32 = line.trim().parse().expect("the program's pid");
    child.kill().unwrap();
    let e = l.finish(&mut child, "sleep").unwrap_err().to_string();
    assert!(e.contains("without a report"), "{e}");
    // Gone, or a zombie waiting for a reaper: either way no longer running.
    let ended = (0..100).any(|_| {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit_once(") ").map(|(_, r)| r.chars().next()));
        let ended = matches!(state, None | Some(Some('Z' | 'X')));
        if !ended {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        ended
    });
    assert!(ended, "the program {pid} outlived its killed launcher");
}

#[test]
fn the_launcher_is_hidden_from_help() {
    let help = Command::new(runner_bin()).arg("--help").output().unwrap();
    assert!(help.status.success());
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.contains("programs"), "{text}");
    assert!(!text.contains(ARG) && !text.contains("launch"), "{text}");
    // Without its arguments it says so in one line and exits 2.
    let bare = Command::new(runner_bin()).arg(ARG).output().unwrap();
    assert_eq!(bare.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&bare.stderr).lines().count(), 1);
}
