//! 100 hostile calls at once, of every way a call can wait (a guest loop, a WASI sleep, a
//! FIFO open, an HTTP server that never answers, an exec that runs until it is killed), and
//! meanwhile a well-behaved plugin that reads a file is called again and again: each of its
//! calls answers within its deadline, and every hostile call ends at its own.

use super::*;
use wasmlet_plugin_host::{ExecFn, ExecOutput, PodScope, ProbeKind, ProbeOutcome, ProbeRequest};

const DEADLINE_MS: u64 = 300;
/// The well-behaved plugin's own deadline: a file read takes microseconds, but the machine
/// runs 100 calls (20 of them spinning guests) on 2 cores meanwhile.
const READER_DEADLINE_MS: u64 = 1000;
/// Generous for a 2-core machine running 100 calls at once; the benchmark holds the number.
const MARGIN: Duration = Duration::from_millis(700);

fn request(args: &str, port: u16) -> ProbeRequest {
    ProbeRequest {
        args: args.to_string(),
        timeout_ms: 10_000,
        pod_ip: "127.0.0.1".into(),
        ports: vec![port],
        containers: vec!["web".into()],
        container: "web".into(),
        kind: ProbeKind::Liveness,
    }
}

#[test]
fn a_hundred_hostile_calls_at_once_leave_other_plugins_within_their_deadlines() {
    let dir = tempfile::tempdir().unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(dir.path().join("fifo"))
        .status()
        .unwrap();
    assert!(made.success());
    std::fs::write(dir.path().join("file"), "hello").unwrap();
    // Accepts connections and never answers them.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();

    let grant = format!(
        "  capabilities:\n    exec: [web]\n    directories:\n    - {{hostPath: {}, guestPath: /data}}\n",
        dir.path().display()
    );
    let limits = format!("  limits: {{deadlineMs: {DEADLINE_MS}}}\n");
    let mut config = String::new();
    // Twenty plugins of each kind, one call each: all 100 wait at once (calls to one plugin
    // take turns at its warm instance).
    for i in 0..20 {
        config += &plugin(
            &format!("loop-{i}"),
            "probe-handler",
            &components::GUEST_PROBE_FAULT.path(),
            &limits,
        );
        config += &plugin(
            &format!("sleep-{i}"),
            "probe-handler",
            &components::GUEST_HOSTILE_PROBE.path(),
            &format!("{limits}  config: {{fault: sleep, in: check, sleepMs: 20000}}\n"),
        );
        config += &plugin(
            &format!("fifo-{i}"),
            "probe-handler",
            &components::GUEST_HOSTILE_PROBE.path(),
            &format!("{limits}  config: {{fault: read, in: check, path: /data/fifo}}\n{grant}"),
        );
        config += &plugin(
            &format!("http-{i}"),
            "probe-handler",
            &components::GUEST_POD_ACCESS.path(),
            &limits,
        );
        config += &plugin(
            &format!("exec-{i}"),
            "probe-handler",
            &components::GUEST_POD_ACCESS.path(),
            &format!("{limits}{grant}"),
        );
    }
    config += &plugin(
        "reader",
        "probe-handler",
        &components::GUEST_HOSTILE_PROBE.path(),
        &format!("  limits: {{deadlineMs: {READER_DEADLINE_MS}}}\n  config: {{fault: read, in: check, path: /data/file}}\n{grant}"),
    );
    let setup = Arc::new(registry(&config));

    // An exec as the host's: it runs until the time it is given, then the command is killed.
    let longest_exec = Arc::new(parking_lot::Mutex::new(Duration::ZERO));
    let exec: ExecFn = {
        let longest_exec = longest_exec.clone();
        Arc::new(move |_: &str, _: &[String], timeout: Duration| {
            {
                let mut longest = longest_exec.lock();
                *longest = (*longest).max(timeout);
            }
            std::thread::sleep(timeout.min(Duration::from_secs(10)));
            Ok::<ExecOutput, String>(ExecOutput {
                exit_code: 137,
                stdout: Vec::new(),
                stderr: Vec::new(),
            })
        })
    };
    let scope = move || PodScope {
        pod_ip: "127.0.0.1".into(),
        ports: vec![port],
        containers: vec!["web".into()],
        deadline: Instant::now() + Duration::from_secs(10),
        exec: Some(exec.clone()),
    };

    let hostile: Vec<(String, String)> = (0..20)
        .flat_map(|i| {
            [
                (format!("loop-{i}"), r#"{"fault": "loop"}"#.to_string()),
                (format!("sleep-{i}"), String::new()),
                (format!("fifo-{i}"), String::new()),
                (format!("http-{i}"), format!(r#"{{"http": {port}}}"#)),
                (format!("exec-{i}"), r#"{"exec": "web"}"#.to_string()),
            ]
        })
        .collect();
    let started = Instant::now();
    let calls: Vec<_> = hostile
        .into_iter()
        .map(|(name, args)| {
            let (setup, scope) = (setup.clone(), scope.clone());
            std::thread::spawn(move || {
                let began = Instant::now();
                let result = setup.registry.probe(&name, &request(&args, port), scope());
                (name, began.elapsed(), result)
            })
        })
        .collect();
    assert_eq!(calls.len(), 100);

    // The well-behaved plugin, while the storm lasts.
    let mut slowest = Duration::ZERO;
    let mut answered = 0;
    while started.elapsed() < Duration::from_millis(3 * DEADLINE_MS) {
        let began = Instant::now();
        let result = setup.registry.probe("reader", &request("", port), scope());
        slowest = slowest.max(began.elapsed());
        assert!(
            result.message.contains("read /data/file: 5 bytes"),
            "the reader answers during the storm: {}",
            result.message
        );
        answered += 1;
    }
    eprintln!("reader: {answered} calls during the storm, slowest {slowest:?}");
    assert!(
        slowest < Duration::from_millis(READER_DEADLINE_MS),
        "the reader's slowest call took {slowest:?}"
    );

    for call in calls {
        let (name, took, result) = call.join().unwrap();
        if name.starts_with("exec") {
            // guest-pod-access answers success when the host ran the command; it was killed.
            assert!(
                result.message.contains("exec exit 137") || result.message.contains("deadline"),
                "{name}: {}",
                result.message
            );
        } else {
            assert_ne!(
                result.outcome,
                ProbeOutcome::Success,
                "{name}: {}",
                result.message
            );
        }
        assert!(
            took < Duration::from_millis(DEADLINE_MS) + MARGIN,
            "{name} took {took:?}: {}",
            result.message
        );
    }
    assert!(
        *longest_exec.lock() <= Duration::from_millis(DEADLINE_MS),
        "an exec is given no more than the call's deadline"
    );
    drop(silent);
}
