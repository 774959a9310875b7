//! Probe overhead against the real containerd (scripts/setup-node.sh):
//!
//! 1. one probe run, per handler (exec, httpGet, tcpSocket, grpc, a probe plugin): wall time,
//!    and CPU spent by wasmlet's side (this process, which runs the prober code) and by the
//!    runtime (containerd, plus the pod's shim with the runc and exec processes it reaps). The
//!    probed server's own work is not counted.
//! 2. 110 pods, each with a liveness exec, a readiness httpGet and a startup tcpSocket probe at
//!    upstream's default period (10 s): CPU of wasmlet, containerd and the shims over a window,
//!    against the same 110 pods without probes.
//!
//! `cargo bench --bench probes` (env `BENCH_RUNS` scales part 1, `BENCH_PODS`,
//! `BENCH_WINDOW_S`).

use wasmlet_test_support::harness;

use harness::{condition, Node};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmlet::prober::{self, Handler, ProbeConfig, ProbeKind, ProbeTarget};
use wasmlet_test_support::components;

fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn percentile(samples: &mut [f64], p: f64) -> f64 {
    samples.sort_by(|a, b| a.total_cmp(b));
    let rank = ((p / 100.0) * (samples.len() as f64 - 1.0)).round() as usize;
    samples[rank.min(samples.len() - 1)]
}

fn hz() -> f64 {
    rustix::param::clock_ticks_per_second() as f64
}

/// utime + stime (+ cutime + cstime: children it reaped) of `pid`, in seconds.
fn cpu_seconds(pid: u32, children: bool) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after_comm = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<u64> = after_comm
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    let field = |i: usize| fields.get(i).copied().unwrap_or(0);
    let ticks = field(11) + field(12) + if children { field(13) + field(14) } else { 0 };
    ticks as f64 / hz()
}

/// CPU seconds of this process (all threads), with microsecond resolution.
fn self_cpu() -> f64 {
    // CLOCK_PROCESS_CPUTIME_ID: user + system time of all threads, as getrusage(RUSAGE_SELF).
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

fn containerd_pid() -> u32 {
    let dir = std::env::var("WASMLET_NODE_DIR").unwrap_or_else(|_| "/var/lib/wasmlet-node".into());
    std::fs::read_to_string(format!("{dir}/containerd.pid"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .expect("containerd.pid (scripts/setup-node.sh)")
}

/// The shim processes serving `sandboxes` (containerd-shim-runc-v2 `-id <sandbox>`).
fn shim_pids(sandboxes: &[String]) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if !args.first().is_some_and(|a| a.contains("containerd-shim")) {
            continue;
        }
        let id = args
            .iter()
            .position(|a| a == "-id")
            .and_then(|i| args.get(i + 1));
        if id.is_some_and(|id| sandboxes.contains(id)) {
            pids.push(pid);
        }
    }
    pids
}

fn runtime_cpu(containerd: u32, shims: &[u32]) -> f64 {
    cpu_seconds(containerd, true) + shims.iter().map(|p| cpu_seconds(*p, true)).sum::<f64>()
}

const SERVER_POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: target}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - name: web\n    image: docker.io/library/busybox:local\n    command: [sh, -c, 'mkdir -p /www; echo ''{\"status\": \"ok\"}'' > /www/health; exec httpd -f -p 8080 -h /www']\n    ports: [{containerPort: 8080}]\n";

const GRPC_POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: grpc}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - name: server\n    image: docker.io/library/wasmlet-test:local\n    imagePullPolicy: Never\n    command: [/usr/local/bin/grpc_health_server, '9090']\n";

fn config(handler: Handler) -> ProbeConfig {
    ProbeConfig {
        kind: ProbeKind::Readiness,
        handler,
        initial_delay: Duration::ZERO,
        period: Duration::from_secs(10),
        timeout: Duration::from_secs(1),
        success_threshold: 1,
        failure_threshold: 3,
        termination_grace: None,
    }
}

fn per_probe(node: &Node) {
    let runs = env_count("BENCH_RUNS", 200);
    node.write_manifest("target.yaml", SERVER_POD);
    let grpc = node.image_present("docker.io/library/wasmlet-test:local");
    if grpc {
        node.write_manifest("grpc.yaml", GRPC_POD);
    }
    let target_pod = node.wait_phase("target", "Running", Duration::from_secs(60));
    let grpc_pod = grpc.then(|| node.wait_phase("grpc", "Running", Duration::from_secs(60)));
    let ip = |pod: &serde_json::Value| pod["status"]["podIP"].as_str().unwrap().to_string();
    let id = |pod: &serde_json::Value| {
        harness::container_status(pod, pod["spec"]["containers"][0]["name"].as_str().unwrap())
            ["containerID"]
            .as_str()
            .unwrap()
            .trim_start_matches("containerd://")
            .to_string()
    };
    std::thread::sleep(Duration::from_secs(1));

    let plugin_dir = tempfile::tempdir().unwrap();
    let plugin_config = plugin_dir.path().join("plugins.yaml");
    std::fs::write(
        &plugin_config,
        format!(
            "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n- name: json-health\n  world: probe-handler\n  path: {}\n",
            components::PROBE_JSON_HEALTH.path().display()
        ),
    )
    .unwrap();
    let registry = wasmlet_plugin_host::PluginRegistry::new(
        wasmlet_plugin_host::PluginEngine::new(None).expect("engine"),
        Some(plugin_config),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let cri = {
        let _guard = runtime.enter();
        wasmlet::cri::CriClient::connect(harness::cri_socket(), Duration::from_secs(60)).unwrap()
    };
    let target_for = |pod: &serde_json::Value, container: &str| ProbeTarget {
        cri: cri.clone(),
        plugins: registry.clone(),
        metrics: Arc::new(prober::metrics::ProbeMetrics::new()),
        namespace: "default".into(),
        pod_name: "target".into(),
        pod_uid: "bench".into(),
        container: container.into(),
        container_id: id(pod),
        pod_ip: ip(pod),
        pod_ports: vec![8080],
        pod_containers: Arc::new(HashMap::from([(container.to_string(), id(pod))])),
    };
    let web = target_for(&target_pod, "web");
    let mut cases: Vec<(&str, ProbeTarget, ProbeConfig, usize)> = vec![
        (
            "exec `true` (CRI ExecSync)",
            web.clone(),
            config(Handler::Exec {
                command: vec!["true".into()],
            }),
            runs,
        ),
        (
            "httpGet :8080/health",
            web.clone(),
            config(Handler::Http(prober::http::HttpGet {
                scheme: prober::http::Scheme::Http,
                host: None,
                port: 8080,
                path: "/health".into(),
                headers: vec![],
            })),
            runs * 5,
        ),
        (
            "tcpSocket :8080",
            web.clone(),
            config(Handler::Tcp {
                host: None,
                port: 8080,
            }),
            runs * 2,
        ),
        (
            "plugin probe-json-health (GET + JSON field)",
            web.clone(),
            config(Handler::Plugin {
                plugin: "json-health".into(),
                args: r#"{"port": 8080, "path": "/health"}"#.into(),
            }),
            runs * 5,
        ),
    ];
    if let Some(pod) = &grpc_pod {
        cases.push((
            "grpc Check :9090",
            target_for(pod, "server"),
            config(Handler::Grpc {
                port: 9090,
                service: String::new(),
            }),
            runs * 5,
        ));
    }
    let containerd = containerd_pid();
    let sandboxes: Vec<String> = node.sandboxes(None).into_iter().map(|s| s.id).collect();
    let shims = shim_pids(&sandboxes);
    println!("## One probe run ({} shims watched)\n", shims.len());
    println!("| probe | runs | median ms | p90 ms | wasmlet CPU µs/probe | runtime CPU µs/probe | total CPU µs/probe |");
    println!("|---|---|---|---|---|---|---|");
    for (name, target, config, n) in cases {
        // Warm up (connections, the plugin's instance).
        for _ in 0..5 {
            runtime.block_on(prober::run_once(&target, &config));
        }
        let mut wall = Vec::with_capacity(n);
        let self_before = self_cpu();
        let runtime_before = runtime_cpu(containerd, &shims);
        for _ in 0..n {
            let started = Instant::now();
            let outcome = runtime.block_on(prober::run_once(&target, &config));
            wall.push(started.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(outcome, prober::Outcome::Success, "{name}");
            // Paced, as probes are: back-to-back connects fill busybox httpd's accept
            // backlog (it forks per connection) and would measure that instead.
            std::thread::sleep(Duration::from_millis(5));
        }
        let agent = (self_cpu() - self_before) / n as f64 * 1e6;
        let rt = (runtime_cpu(containerd, &shims) - runtime_before) / n as f64 * 1e6;
        println!(
            "| {name} | {n} | {:.2} | {:.2} | {agent:.0} | {rt:.0} | {:.0} |",
            percentile(&mut wall, 50.0),
            percentile(&mut wall, 90.0),
            agent + rt
        );
    }
    node.remove_manifest("target.yaml");
    if grpc {
        node.remove_manifest("grpc.yaml");
    }
    node.wait_for("the pods to go", Duration::from_secs(60), |n| {
        n.sandboxes(None).is_empty().then_some(())
    });
}

/// The probe sets of part 2.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ProbeSet {
    None,
    /// Liveness exec, readiness httpGet, startup tcpSocket.
    WithExec,
    /// Liveness tcpSocket, readiness httpGet, startup httpGet.
    NetworkOnly,
}

impl ProbeSet {
    fn describe(self) -> &'static str {
        match self {
            ProbeSet::None => "without probes",
            ProbeSet::WithExec => "liveness exec + readiness httpGet + startup tcpSocket",
            ProbeSet::NetworkOnly => "liveness tcpSocket + readiness httpGet + startup httpGet",
        }
    }

    fn yaml(self) -> &'static str {
        match self {
            ProbeSet::None => "",
            ProbeSet::WithExec => "    livenessProbe: {exec: {command: ['true']}}\n    readinessProbe: {httpGet: {port: 8080, path: /}}\n    startupProbe: {tcpSocket: {port: 8080}}\n",
            ProbeSet::NetworkOnly => "    livenessProbe: {tcpSocket: {port: 8080}}\n    readinessProbe: {httpGet: {port: 8080, path: /}}\n    startupProbe: {httpGet: {port: 8080, path: /}}\n",
        }
    }
}

fn fleet_pod(i: usize, probes: ProbeSet) -> String {
    format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}}}\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - name: web\n    image: docker.io/library/busybox:local\n    command: [httpd, -f, -p, '8080', -h, /var/www]\n    ports: [{{containerPort: 8080}}]\n{}", probes.yaml())
}

/// CPU (% of one core) of wasmlet, containerd and the shims over `window`.
fn fleet_window(node: &Node, window: Duration) -> (f64, f64, f64) {
    let sandboxes: Vec<String> = node.sandboxes(None).into_iter().map(|s| s.id).collect();
    let shims = shim_pids(&sandboxes);
    let containerd = containerd_pid();
    let wasmlet = node.pid().expect("wasmlet pid");
    let before = (
        cpu_seconds(wasmlet, true),
        cpu_seconds(containerd, true),
        shims.iter().map(|p| cpu_seconds(*p, true)).sum::<f64>(),
    );
    std::thread::sleep(window);
    let after = (
        cpu_seconds(wasmlet, true),
        cpu_seconds(containerd, true),
        shims.iter().map(|p| cpu_seconds(*p, true)).sum::<f64>(),
    );
    let pct = |a: f64, b: f64| (b - a) / window.as_secs_f64() * 100.0;
    (
        pct(before.0, after.0),
        pct(before.1, after.1),
        pct(before.2, after.2),
    )
}

fn fleet(node: &Node) {
    let pods = env_count("BENCH_PODS", 110);
    let window = Duration::from_secs(env_count("BENCH_WINDOW_S", 60) as u64);
    println!(
        "\n## {pods} pods, three probes each at the default period (10 s; the startup probe stops once passed); window {} s\n",
        window.as_secs()
    );
    println!("| {pods} pods | wasmlet % core | containerd % core | shims (+ runc, exec) % core | total % core |");
    println!("|---|---|---|---|---|");
    for probes in [ProbeSet::None, ProbeSet::WithExec, ProbeSet::NetworkOnly] {
        let started = Instant::now();
        for i in 0..pods {
            node.write_manifest(&format!("p{i}.yaml"), &fleet_pod(i, probes));
        }
        node.wait_for("all pods ready", Duration::from_secs(900), |n| {
            let list = n.get_json("/pods");
            let ready = list["items"]
                .as_array()?
                .iter()
                .filter(|p| condition(p, "Ready") == "True")
                .count();
            (ready >= pods).then_some(())
        });
        eprintln!(
            "{pods} pods ({}) ready in {:.1} s",
            probes.describe(),
            started.elapsed().as_secs_f64()
        );
        // Let start-up work (and the startup probes) settle, and spread the probes.
        std::thread::sleep(Duration::from_secs(15));
        let (w, c, s) = fleet_window(node, window);
        println!(
            "| {} | {w:.2} | {c:.2} | {s:.2} | {:.2} |",
            probes.describe(),
            w + c + s
        );
        for i in 0..pods {
            node.remove_manifest(&format!("p{i}.yaml"));
        }
        node.wait_for("the pods to go", Duration::from_secs(900), |n| {
            n.sandboxes(None).is_empty().then_some(())
        });
    }
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is expected.
    let node = Node::start("b-probes");
    println!(
        "# probes benchmark ({} cores)\n",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    per_probe(&node);
    fleet(&node);
}
