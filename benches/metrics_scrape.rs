//! What one scrape of each metrics endpoint costs wasmlet at 110 pods (issue 17's bound: under
//! 5 ms of wasmlet CPU), against the real containerd (scripts/setup-node.sh). Each pod has a
//! readiness probe, so `/metrics/probes` carries its series too.
//!
//! wasmlet's CPU (utime + stime of the process) is read over `BENCH_SCRAPES` scrapes of one
//! endpoint, less what it spends idle over the same wall time (measured just after).
//! `/metrics/cadvisor` and `/metrics/resource` read in housekeeping (every second on test
//! nodes), not in the scrape: the bench first prints what one housekeeping reading of each
//! costs, as wasmlet's CPU over 20 s with one more endpoint's housekeeping running against the
//! 20 s before (nothing scraped yet, then `/metrics/resource`, then `/metrics/cadvisor` too).
//!
//! `cargo bench --bench metrics_scrape` (env `BENCH_PODS`, `BENCH_SCRAPES`).

use wasmlet_test_support::harness;

use harness::Node;
use std::time::{Duration, Instant};

fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// utime + stime of `pid`, in seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after_comm = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<u64> = after_comm
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    let ticks = fields.get(11).copied().unwrap_or(0) + fields.get(12).copied().unwrap_or(0);
    ticks as f64 / rustix::param::clock_ticks_per_second() as f64
}

fn pod(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  terminationGracePeriodSeconds: 0\n  containers:\n  - name: app\n    image: docker.io/library/busybox:local\n    command: [sh, -c, 'exec sleep 3600']\n    readinessProbe:\n      exec: {{command: ['true']}}\n      periodSeconds: 10\n"
    )
}

fn main() {
    let pods = env_count("BENCH_PODS", 110);
    let scrapes = env_count("BENCH_SCRAPES", 200);
    let node = Node::start("bench-scrape");
    let pid = node.pid().expect("wasmlet runs");
    for i in 0..pods {
        node.write_manifest(&format!("p{i}.yaml"), &pod(&format!("p{i}")));
    }
    node.wait_for("all pods running", Duration::from_secs(600), |n| {
        let list = n.get_json("/pods");
        let running = list["items"]
            .as_array()?
            .iter()
            .filter(|p| p["status"]["phase"] == "Running")
            .count();
        (running >= pods).then_some(())
    });
    // Let the start-up work settle and every probe run once.
    std::thread::sleep(Duration::from_secs(12));
    // wasmlet's CPU at rest, before anything is scraped (no housekeeping runs), then with the
    // housekeeping of one more endpoint each time (the first scrape starts it).
    let window = Duration::from_secs(HOUSEKEEPING_WINDOW_S);
    let mut before = cpu_over(pid, window);
    println!(
        "## one housekeeping reading at {pods} pods (every 1 s, {HOUSEKEEPING_WINDOW_S} readings)"
    );
    println!("| endpoint | wasmlet CPU per reading, ms |\n|---|---|");
    for path in ["/metrics/resource", "/metrics/cadvisor"] {
        node.try_get(path).expect(path);
        let with = cpu_over(pid, window);
        println!(
            "| {path} | {:.1} |",
            ((with - before).max(0.0) * 1000.0) / HOUSEKEEPING_WINDOW_S as f64
        );
        before = with;
    }
    println!();

    println!("## one scrape at {pods} pods ({scrapes} scrapes per endpoint)");
    println!(
        "| endpoint | bytes | series lines | wasmlet CPU per scrape, ms | wall per scrape, ms |"
    );
    println!("|---|---|---|---|---|");
    for path in [
        "/metrics",
        "/metrics/probes",
        "/metrics/resource",
        "/metrics/cadvisor",
    ] {
        let Some(sample) = node.try_get(path) else {
            println!("| {path} | not served | | | |");
            continue;
        };
        let lines = sample.lines().filter(|l| !l.starts_with('#')).count();
        // Idle CPU over a window as long as the scrapes take.
        let began = Instant::now();
        let cpu = cpu_seconds(pid);
        for _ in 0..scrapes {
            node.try_get(path).expect(path);
        }
        let busy = cpu_seconds(pid) - cpu;
        let wall = began.elapsed();
        let idle_cpu = cpu_seconds(pid);
        std::thread::sleep(wall);
        let idle = cpu_seconds(pid) - idle_cpu;
        println!(
            "| {path} | {} | {lines} | {:.2} | {:.2} |",
            sample.len(),
            ((busy - idle).max(0.0) * 1000.0) / scrapes as f64,
            wall.as_secs_f64() * 1000.0 / scrapes as f64
        );
    }
}

/// Seconds of the 1s housekeeping period over which its cost is measured.
const HOUSEKEEPING_WINDOW_S: u64 = 20;

/// wasmlet's CPU seconds over `window` of wall time.
fn cpu_over(pid: u32, window: Duration) -> f64 {
    let before = cpu_seconds(pid);
    std::thread::sleep(window);
    cpu_seconds(pid) - before
}
