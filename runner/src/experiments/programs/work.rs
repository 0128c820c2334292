//! Running an unmodified program under an allocator: the allocators (`LD_PRELOAD`
//! libraries, found or reported unavailable with how to get them), the programs and
//! their workloads, and one timed run (wall time, and the CPU time and peak resident
//! memory `wait4` reports for the process, started and waited for by a launcher of a
//! few MB, see `crate::launch`, so that the peak is the program's own).

use crate::lab::error::{Error, Result};
use crate::lab::measure::median_or_nan;
use crate::launch::{Launch, Report};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// An allocator a program runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Alloc {
    /// The program as it is: the C library's allocator (or, for a program linked
    /// against another allocator, that one: Debian's redis-server links jemalloc).
    Default,
    /// handoff-alloc (libhandoff_alloc.so, crates/alloc-preload).
    Handoff,
    /// jemalloc (Debian: libjemalloc2).
    Jemalloc,
    /// mimalloc (Debian: libmimalloc2.0).
    Mimalloc,
    /// gperftools' tcmalloc (Debian: libgoogle-perftools4).
    Tcmalloc,
}

impl Alloc {
    /// Every allocator, in the order of the tables.
    pub const ALL: [Alloc; 5] = [
        Alloc::Default,
        Alloc::Handoff,
        Alloc::Jemalloc,
        Alloc::Mimalloc,
        Alloc::Tcmalloc,
    ];

    /// The name in tables and results.
    pub fn name(self) -> &'static str {
        match self {
            Alloc::Default => "default",
            Alloc::Handoff => "handoff-alloc",
            Alloc::Jemalloc => "jemalloc",
            Alloc::Mimalloc => "mimalloc",
            Alloc::Tcmalloc => "tcmalloc",
        }
    }

    /// The library to preload (`None` for the program as it is), or why it is
    /// unavailable and how to get it.
    pub fn library(self) -> Option<std::result::Result<PathBuf, String>> {
        let (var, names, how): (&str, &[&str], &str) = match self {
            Alloc::Default => return None,
            Alloc::Handoff => return Some(handoff_library()),
            Alloc::Jemalloc => (
                "HANDOFF_JEMALLOC_LIB",
                &["libjemalloc.so.2", "libjemalloc.so"],
                "apt-get install libjemalloc2, or set HANDOFF_JEMALLOC_LIB to a libjemalloc .so",
            ),
            Alloc::Mimalloc => (
                "HANDOFF_MIMALLOC_LIB",
                &["libmimalloc.so.2", "libmimalloc.so"],
                "apt-get install libmimalloc2.0, or set HANDOFF_MIMALLOC_LIB to a libmimalloc .so",
            ),
            Alloc::Tcmalloc => (
                "HANDOFF_TCMALLOC_LIB",
                &["libtcmalloc_minimal.so.4", "libtcmalloc.so.4"],
                "apt-get install libgoogle-perftools4, or set HANDOFF_TCMALLOC_LIB to a libtcmalloc .so",
            ),
        };
        Some(crate::lab::contenders::find_library(var, names, None, how))
    }
}

/// The command that builds libhandoff_alloc.so.
pub const BUILD: &str = "cargo build --release -p handoff-alloc-preload";

/// libhandoff_alloc.so: `HANDOFF_PRELOAD_LIB` if set; else, for a runner that cargo
/// built in the repository, the release library brought up to date with [`BUILD`] in
/// the runner's target folder (a few seconds when it is); else one beside the runner.
fn handoff_library() -> std::result::Result<PathBuf, String> {
    const NAME: &str = "libhandoff_alloc.so";
    let how = format!(
        "run `{BUILD}` in the handoff repository and set HANDOFF_PRELOAD_LIB to \
         target/release/{NAME}"
    );
    if std::env::var_os("HANDOFF_PRELOAD_LIB").is_some() {
        return crate::lab::contenders::find_library("HANDOFF_PRELOAD_LIB", &[NAME], None, &how);
    }
    let exe = std::env::current_exe().map_err(|e| format!("no runner path ({e}); {how}"))?;
    let dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let target = dir
        .file_name()
        .filter(|n| *n == "release" || *n == "debug")
        .and(dir.parent());
    if let (Some(target), true) = (target, manifest.is_file()) {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let built = Command::new(cargo)
            .args([
                "build",
                "--quiet",
                "--release",
                "-p",
                "handoff-alloc-preload",
            ])
            .arg("--manifest-path")
            .arg(&manifest)
            .arg("--target-dir")
            .arg(target)
            .status();
        let so = target.join("release").join(NAME);
        return match built {
            Ok(s) if s.success() && so.is_file() => Ok(so),
            Ok(s) => Err(format!("`{BUILD}` failed ({s}); {how}")),
            Err(e) => Err(format!("cannot run cargo ({e}); {how}")),
        };
    }
    crate::lab::contenders::find_library("HANDOFF_PRELOAD_LIB", &[NAME], Some(dir), &how)
}

/// An unmodified program and its workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Program {
    /// redis-server driven by redis-benchmark (the server is the one timed and
    /// measured; the benchmark runs on the C library's allocator).
    Redis,
    /// sqlite3 on a generated database: insert, index, update, delete, join.
    Sqlite,
    /// python3 on an allocation-heavy script: dicts, lists, strings, json, threads.
    Python,
    /// lua5.4 on an allocation-heavy script: tables and strings.
    Lua,
    /// Document 004's test as the document ran it, in C++ (cpp-baseline/cpp/
    /// alloc_test.cpp, compiled here with the system's C++ compiler): the Rust port's
    /// loop through `operator new` and `delete`.
    AllocTest,
}

/// The C++ driver of document 004's test, compiled by [`compile_alloc_test`].
const ALLOC_TEST_CPP: &str = include_str!("../../../../cpp-baseline/cpp/alloc_test.cpp");

/// Compiles document 004's test in C++ into `dir` with `compiler`; the binary's path.
pub fn compile_alloc_test(compiler: &Path, dir: &Path) -> std::result::Result<PathBuf, String> {
    let src = dir.join("alloc_test.cpp");
    let exe = dir.join("alloc_test");
    std::fs::write(&src, ALLOC_TEST_CPP)
        .map_err(|e| format!("cannot write {}: {e}", src.display()))?;
    let out = Command::new(compiler)
        .args(["-O2", "-std=c++17", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .map_err(|e| format!("{} did not run: {e}", compiler.display()))?;
    if out.status.success() {
        Ok(exe)
    } else {
        Err(format!(
            "{} could not compile document 004's test: {}",
            compiler.display(),
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .unwrap_or("")
        ))
    }
}

impl Program {
    /// Every program, in the order of the tables.
    pub const ALL: [Program; 5] = [
        Program::Redis,
        Program::Sqlite,
        Program::Python,
        Program::Lua,
        Program::AllocTest,
    ];

    /// The name in tables and results.
    pub fn name(self) -> &'static str {
        match self {
            Program::Redis => "redis",
            Program::Sqlite => "sqlite3",
            Program::Python => "python3",
            Program::Lua => "lua",
            Program::AllocTest => "alloc-test",
        }
    }

    /// The executables it needs, each with its candidates, and the package.
    fn needs(self) -> (&'static [&'static [&'static str]], &'static str) {
        match self {
            Program::Redis => (
                &[&["redis-server"], &["redis-benchmark"], &["redis-cli"]],
                "apt-get install redis-server redis-tools",
            ),
            Program::Sqlite => (&[&["sqlite3"]], "apt-get install sqlite3"),
            Program::Python => (&[&["python3"]], "apt-get install python3"),
            Program::Lua => (&[&["lua5.4", "lua5.3", "lua"]], "apt-get install lua5.4"),
            Program::AllocTest => (&[&["c++", "g++", "clang++"]], "apt-get install g++"),
        }
    }

    /// How many times a run runs the program under every allocator, the allocators in
    /// turn each time, the run's figures being the medians of these passes
    /// (`of_passes`): document 004's test takes 0.08 s at `runner all`'s scale, short
    /// enough for the host's moments to move one run's ratios 0.73-1.57x (2026-12-05),
    /// and cheap enough to run nine times (five until 2026-12-05: jemalloc's time over
    /// handoff-alloc's then read 1.08-1.12x in the medians of consecutive `runner all`
    /// runs, with 6 to 9 of 9 runs above 1, and the verdict changed between holds and
    /// within noise); the other programs once.
    pub fn passes(self) -> usize {
        match self {
            Program::AllocTest => 9,
            _ => 1,
        }
    }

    /// Its executables' paths, or why it is unavailable and how to get it.
    pub fn find(self) -> std::result::Result<Vec<PathBuf>, String> {
        let (needs, how) = self.needs();
        needs
            .iter()
            .map(|cands| {
                cands
                    .iter()
                    .find_map(|c| on_path(c))
                    .ok_or_else(|| format!("{} is not installed: {how}", cands[0]))
            })
            .collect()
    }
}

/// `name` on the `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// One run of a program under an allocator.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Sample {
    /// Wall time of the workload, seconds (redis: the benchmark's).
    pub wall_s: f64,
    /// User plus system CPU time of the program's process (with any children it
    /// waited for), seconds, as `wait4` reports it to the launcher that started it
    /// (redis: the server's).
    pub cpu_s: f64,
    /// Peak resident memory of the program's own process, bytes: its `ru_maxrss`, as
    /// `wait4` reports it to the launcher that forked it (`crate::launch`; redis: the
    /// server's). Linux's `exec` keeps the high-water mark of the memory before it, so
    /// the figure cannot fall below the launcher's resident memory at the fork, a few
    /// MB; it no longer carries the runner's own (about 12 MB).
    pub peak_bytes: u64,
    /// What the program printed that shows its work was right (compared across the
    /// allocators of one run).
    pub output: String,
    /// Document 004's test in C++: its own timing of the replacements, nanoseconds
    /// each.
    #[serde(default)]
    pub ns_per_replacement: Option<f64>,
}

/// One run's sample of a program under one allocator from its passes' samples
/// ([`Program::passes`], in the order they ran): the medians of the wall time, CPU time,
/// peak memory and time a replacement, and the output they all printed. A pass that
/// failed fails the run (the first failed pass's error), and so, where none failed, does
/// a pass that printed another output than the first.
pub fn of_passes(passes: Vec<Result<Sample>>) -> Result<Sample> {
    let passes: Vec<Sample> = passes.into_iter().collect::<Result<_>>()?;
    let Some(first) = passes.first() else {
        return Err(Error::Run("no pass ran".into()));
    };
    if let Some(k) = passes.iter().position(|p| p.output != first.output) {
        return Err(Error::Run(format!(
            "pass {} of {} printed another output than pass 1: {:?} vs {:?}",
            k + 1,
            passes.len(),
            passes[k].output,
            first.output
        )));
    }
    let of = |f: fn(&Sample) -> f64| median_or_nan(passes.iter().map(f));
    let per: Vec<f64> = passes.iter().filter_map(|p| p.ns_per_replacement).collect();
    Ok(Sample {
        wall_s: of(|p| p.wall_s),
        cpu_s: of(|p| p.cpu_s),
        peak_bytes: of(|p| p.peak_bytes as f64).round() as u64,
        output: first.output.clone(),
        ns_per_replacement: (per.len() == passes.len()).then(|| median_or_nan(per)),
    })
}

/// Sizes of the workloads at `scale` (1 = the default).
fn sized(base: u64, scale: f64) -> u64 {
    ((base as f64 * scale).round() as u64).max(1)
}

/// Runs `program` once under `preload` (none: as it is) in the scratch folder `dir`.
pub fn run(
    program: Program,
    exes: &[PathBuf],
    preload: Option<&Path>,
    scale: f64,
    dir: &Path,
) -> Result<Sample> {
    let with = |c: &mut Command| {
        if let Some(p) = preload {
            c.env("LD_PRELOAD", p);
        }
    };
    match program {
        Program::Redis => redis(exes, preload, scale, dir),
        Program::Sqlite => {
            let rows = sized(200_000, scale);
            let sql = format!(
                "CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v BLOB);\n\
                 WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {rows})\n\
                 INSERT INTO t SELECT x, printf('key%08d', x * 7919 % {rows}), zeroblob(x % 500) FROM c;\n\
                 CREATE INDEX tk ON t(k);\n\
                 UPDATE t SET v = zeroblob(600) WHERE id % 3 = 0;\n\
                 DELETE FROM t WHERE id % 5 = 0;\n\
                 SELECT count(*), sum(length(v)), min(k), max(k) FROM t;\n\
                 SELECT count(*) FROM t a JOIN t b ON a.k = b.k WHERE a.id < {};\n\
                 SELECT k, count(*) FROM t GROUP BY substr(k, 1, 6) ORDER BY 2 DESC LIMIT 1;\n",
                rows / 4
            );
            let db = dir.join("db.sqlite");
            let _ = std::fs::remove_file(&db);
            let mut c = Command::new(&exes[0]);
            c.arg(&db);
            with(&mut c);
            let s = timed(c, Some(sql.as_bytes()), "sqlite3")?;
            let _ = std::fs::remove_file(&db);
            Ok(s)
        }
        Program::Python => {
            let n = sized(150_000, scale);
            let script = format!(
                "import json, hashlib\n\
                 from concurrent.futures import ThreadPoolExecutor\n\
                 rows = [{{'id': i, 'name': 'n%07d' % i, 'tags': [str(i % 7)] * (i % 5)}} for i in range({n})]\n\
                 text = json.dumps(rows)\n\
                 assert json.loads(text) == rows\n\
                 def work(k):\n\
                 \x20   d = {{}}\n\
                 \x20   for i in range({m}):\n\
                 \x20       d[(k, i)] = ('x' * (i % 300), [i] * (i % 9))\n\
                 \x20   return sum(len(v[0]) + len(v[1]) for v in d.values())\n\
                 with ThreadPoolExecutor(4) as ex:\n\
                 \x20   parts = list(ex.map(work, range(8)))\n\
                 print(len(text), hashlib.sha256(text.encode()).hexdigest()[:16], sum(parts))\n",
                m = n / 4
            );
            let mut c = Command::new(&exes[0]);
            c.arg("-c").arg(script);
            with(&mut c);
            timed(c, None, "python3")
        }
        Program::Lua => {
            let n = sized(700_000, scale);
            let script = format!(
                "local n = {n}\n\
                 local t = {{}}\n\
                 for i = 1, n do t[i] = {{ id = i, name = 'n' .. i, tags = {{ i % 7, i % 5 }} }} end\n\
                 local parts = {{}}\n\
                 for i = 1, n, 3 do parts[#parts + 1] = t[i].name .. ':' .. #t[i].tags end\n\
                 local s = table.concat(parts, ',')\n\
                 local count = 0\n\
                 for _ in s:gmatch('n%d+') do count = count + 1 end\n\
                 local m = {{}}\n\
                 for i = 1, n do local k = 'k' .. (i % 5000); local v = (m[k] or '') .. 'xy'; if #v > 400 then v = '' end; m[k] = v end\n\
                 t = nil; collectgarbage()\n\
                 local total = 0\n\
                 for _, v in pairs(m) do total = total + #v end\n\
                 print(#s, count, total)\n"
            );
            let mut c = Command::new(&exes[0]);
            c.arg("-e").arg(script);
            with(&mut c);
            timed(c, None, "lua")
        }
        Program::AllocTest => {
            let mut c = Command::new(&exes[0]);
            c.arg(sized(64 << 20, scale).to_string())
                .arg(sized(10_000_000, scale).to_string());
            with(&mut c);
            timed(c, None, "alloc-test")
        }
    }
}

/// `c` (program, arguments, environment: `LD_PRELOAD` among it) to be started through
/// this binary as its launcher (`crate::launch`).
fn launch(c: &Command, who: &str) -> Result<Launch> {
    Launch::new(&crate::launch::this_binary()?, c).map_err(|e| {
        Error::Run(format!(
            "{who}: no temporary folder for its launcher's report: {e}"
        ))
    })
}

/// Runs `c` to its end with `input` on its stdin, through a launcher (`crate::launch`),
/// timing it; its stdout is the sample's output. A failure to start, a non-zero exit,
/// a signal, or a launcher that ended without its report is an error.
fn timed(c: Command, input: Option<&[u8]>, who: &str) -> Result<Sample> {
    let mut launch = launch(&c, who)?;
    launch
        .command()
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = launch
        .command()
        .spawn()
        .map_err(|e| Error::Run(format!("{who} did not start (its launcher did not): {e}")))?;
    // The pipes are drained on threads, so that neither side blocks the other.
    let stdin = child.stdin.take();
    let input = input.map(<[u8]>::to_vec);
    let feeder = std::thread::spawn(move || {
        if let (Some(mut s), Some(i)) = (stdin, input) {
            use std::io::Write;
            let _ = s.write_all(&i);
        }
    });
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let usage = launch.finish(&mut child, who);
    let wall_s = start.elapsed().as_secs_f64();
    let _ = feeder.join();
    let (out, err) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    let usage = usage?;
    if !usage.end.success() {
        return Err(Error::Run(format!(
            "{who} failed ({}): {}",
            usage.end,
            String::from_utf8_lossy(&err).trim()
        )));
    }
    let ns_per_replacement = String::from_utf8_lossy(&err)
        .lines()
        .find_map(|l| l.strip_prefix("ns_per_replacement ")?.trim().parse().ok());
    Ok(Sample {
        wall_s,
        cpu_s: usage.cpu_s(),
        peak_bytes: usage.peak_bytes,
        output: String::from_utf8_lossy(&out).trim().to_string(),
        ns_per_replacement,
    })
}

fn drain<R: std::io::Read + Send + 'static>(r: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(mut r) = r {
            let _ = r.read_to_end(&mut v);
        }
        v
    })
}

/// redis-server under the allocator, driven by redis-benchmark on the C library's:
/// the server starts on a free local port without persistence, the benchmark runs
/// its commands (timed), `DBSIZE` and `INFO keyspace` are the output, and a `SHUTDOWN
/// NOSAVE` ends the server, whose CPU time and peak memory its launcher's `wait4`
/// gives (`crate::launch`).
fn redis(exes: &[PathBuf], preload: Option<&Path>, scale: f64, dir: &Path) -> Result<Sample> {
    let (server, bench, cli) = (&exes[0], &exes[1], &exes[2]);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| Error::Run(format!("no free local port for redis: {e}")))?
        .port()
        .to_string();
    let mut s = Command::new(server);
    s.args([
        "--port",
        &port,
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
    ])
    .args(["--daemonize", "no", "--logfile", ""])
    .arg("--dir")
    .arg(dir);
    if let Some(p) = preload {
        s.env("LD_PRELOAD", p);
    }
    let mut launch = launch(&s, "redis-server")?;
    let mut child = launch
        .command()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            Error::Run(format!(
                "redis-server did not start (its launcher did not): {e}"
            ))
        })?;
    let err = drain(child.stderr.take());
    let cli_run = |args: &[&str]| {
        Command::new(cli)
            .args(["-p", &port])
            .args(args)
            .stderr(Stdio::null())
            .output()
    };
    // Up within 10 s, or the run fails.
    let up = (0..200).any(|_| {
        let ok = cli_run(&["ping"]).is_ok_and(|o| o.stdout.starts_with(b"PONG"));
        if !ok {
            std::thread::sleep(Duration::from_millis(50));
        }
        ok
    });
    // Killing the launcher kills the server with it (`PR_SET_PDEATHSIG`).
    let stop = |child: &mut std::process::Child| {
        let _ = cli_run(&["shutdown", "nosave"]);
        let _ = child.kill();
    };
    if !up {
        stop(&mut child);
        let _ = launch.finish(&mut child, "redis-server");
        let err = err.join().unwrap_or_default();
        return Err(Error::Run(format!(
            "redis-server did not answer on port {port}: {}",
            String::from_utf8_lossy(&err).trim()
        )));
    }
    let n = sized(140_000, scale).to_string();
    let start = Instant::now();
    let b = Command::new(bench)
        .args([
            "-p", &port, "-q", "-n", &n, "-c", "20", "-P", "8", "-d", "256",
        ])
        .args([
            "-r",
            "100000",
            "-t",
            "set,get,incr,lpush,rpop,sadd,hset,spop,zadd,lrange_100",
        ])
        .stdin(Stdio::null())
        .output();
    let wall_s = start.elapsed().as_secs_f64();
    // A fixed keyspace (-r) makes the key count depend on the random keys drawn; the
    // output checked is that every command completed and the server still answers.
    let bench_ok = b.as_ref().is_ok_and(|o| o.status.success());
    let lines = b
        .as_ref()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split(['\r', '\n'])
                .filter(|l| l.contains("requests per second") && !l.contains("rps="))
                .count()
        })
        .unwrap_or(0);
    let alive = cli_run(&["ping"]).is_ok_and(|o| o.stdout.starts_with(b"PONG"));
    let _ = cli_run(&["shutdown", "nosave"]);
    let usage: Report = launch.finish(&mut child, "redis-server")?;
    let _ = err.join();
    if !bench_ok {
        return Err(Error::Run(format!(
            "redis-benchmark failed against the server{}",
            preload.map_or(String::new(), |p| format!(" under {}", p.display()))
        )));
    }
    Ok(Sample {
        wall_s,
        cpu_s: usage.cpu_s(),
        peak_bytes: usage.peak_bytes,
        output: format!(
            "{lines} benchmarks completed; server {}; exit {}",
            if alive {
                "answered after them"
            } else {
                "did not answer after them"
            },
            usage.end
        ),
        ns_per_replacement: None,
    })
}

/// Whether `library`, preloaded, is mapped into a process (`cat /proc/self/maps`
/// under it): a library the loader skips would leave the program on its own
/// allocator and its figures would be another allocator's.
pub fn loads(library: &Path) -> std::result::Result<(), String> {
    let out = Command::new("cat")
        .arg("/proc/self/maps")
        .env("LD_PRELOAD", library)
        .output()
        .map_err(|e| format!("cat /proc/self/maps did not run: {e}"))?;
    let name = library.file_name().unwrap_or_default().to_string_lossy();
    if String::from_utf8_lossy(&out.stdout).contains(name.as_ref()) {
        Ok(())
    } else {
        Err(format!(
            "{} was not loaded (LD_PRELOAD): the loader skipped it{}",
            library.display(),
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .map_or(String::new(), |l| format!(" ({l})"))
        ))
    }
}
