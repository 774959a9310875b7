//! Pod lifecycle benchmark against the real containerd (scripts/setup-node.sh):
//!
//! 1. pod start: manifest written -> container running in `/pods`, against the raw CRI
//!    sequence RunPodSandbox + CreateContainer + StartContainer on the same containerd, the two
//!    interleaved in one run;
//! 2. status latency: container exit (CRI `finished_at`) -> `/pods` shows it terminated;
//! 3. at 110 pods: the cost of one relist, of the per-event work (one pod's runtime status),
//!    and wasmlet's idle CPU.
//!
//! `cargo bench --bench pod_lifecycle` (env `BENCH_STARTS`, `BENCH_EXITS`, `BENCH_PODS`).

#[path = "../tests/integration/harness.rs"]
#[allow(dead_code)]
mod harness;

#[path = "support.rs"]
mod support;

use harness::{busybox_pod, container_status, Node, NodeOptions};
use std::time::{Duration, Instant, SystemTime};
use support::{env_count, ms, percentile, raw_cri_start, raw_node_context, remove_sandbox};
use wasmlet::cri::CriClient;
use wasmlet::health::Health;
use wasmlet::pleg::{Pleg, PlegConfig};
use wasmlet::runtime_status::PodRuntimeStatus;

fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after_comm = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of /proc/pid/stat (11 and 12 after the comm).
    fields
        .get(11)
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0)
        + fields
            .get(12)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
}

fn main() {
    let starts = env_count("BENCH_STARTS", 15);
    let exits = env_count("BENCH_EXITS", 30);
    let pods = env_count("BENCH_PODS", 110);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let socket = harness::cri_socket();
    let cri = {
        let _guard = runtime.enter();
        CriClient::connect(&socket, Duration::from_secs(120)).unwrap()
    };
    let mut node = Node::start_with(
        "bench",
        NodeOptions {
            extra_kubelet: format!("maxPods: {}\n", pods + 50),
            // Production pacing: events, with a slow relist as the safety net.
            extra_wasmlet: "plegRelistPeriod: 1s\nplegEventedRelistPeriod: 10s\n".into(),
            ..Default::default()
        },
    );
    node.wait_for("the event subscription", Duration::from_secs(10), |n| {
        n.log()
            .contains("subscribed to containerd task events")
            .then_some(())
    });
    node.poll = Duration::from_millis(2);
    let raw_node = raw_node_context(&node);

    // 1. Pod start, interleaved.
    let (mut raw, mut agent) = (Vec::new(), Vec::new());
    for i in 0..starts {
        let (took, sandbox) = runtime.block_on(raw_cri_start(&cri, &raw_node, &format!("raw{i}")));
        raw.push(ms(took));
        runtime.block_on(remove_sandbox(&cri, &sandbox));

        let name = format!("start{i}");
        let written = Instant::now();
        node.write_manifest(
            &format!("{name}.yaml"),
            &busybox_pod(
                &name,
                "  terminationGracePeriodSeconds: 0\n",
                "exec sleep 3600",
            ),
        );
        node.wait_for("the pod to run", Duration::from_secs(30), |n| {
            n.pod(&name)
                .filter(|p| container_status(p, "main")["state"]["running"].is_object())
        });
        agent.push(ms(written.elapsed()));
        node.remove_manifest(&format!("{name}.yaml"));
        node.wait_for("the pod to go", Duration::from_secs(30), |n| {
            n.pod(&name).is_none().then_some(())
        });
    }
    let raw_median = percentile(&mut raw, 50.0);
    let agent_median = percentile(&mut agent, 50.0);
    println!("## pod start ({starts} pods, interleaved)");
    println!("| path | median ms | p90 ms |\n|---|---|---|");
    println!(
        "| raw CRI RunPodSandbox+CreateContainer+StartContainer | {raw_median:.1} | {:.1} |",
        percentile(&mut raw, 90.0)
    );
    println!(
        "| wasmlet: manifest written -> running in /pods | {agent_median:.1} | {:.1} |",
        percentile(&mut agent, 90.0)
    );
    println!(
        "overhead: {:+.1} % of the raw CRI time (ratio {:.3})\n",
        (agent_median / raw_median - 1.0) * 100.0,
        agent_median / raw_median
    );

    // 2. Status latency: exit -> terminated in /pods.
    let mut latency = Vec::new();
    for i in 0..exits {
        let name = format!("exit{i}");
        node.write_manifest(
            &format!("{name}.yaml"),
            &busybox_pod(&name, "  restartPolicy: Never\n", "sleep 0.5"),
        );
        let pod = node.wait_for("the exit to show", Duration::from_secs(30), |n| {
            n.pod(&name)
                .filter(|p| container_status(p, "main")["state"]["terminated"].is_object())
        });
        let seen = SystemTime::now();
        let uid = pod["metadata"]["uid"].as_str().unwrap().to_string();
        // CRI records the exit (with containerd's finished_at) shortly after the event.
        let finished = node.wait_for("CRI to record the exit", Duration::from_secs(10), |_| {
            let status = runtime
                .block_on(PodRuntimeStatus::fetch(&cri, &uid, "bench"))
                .ok()?;
            wasmlet::timestamps::time_of(status.containers.first()?.finished_at)
        });
        latency.push(ms(seen.duration_since(finished).unwrap_or_default()));
        node.remove_manifest(&format!("{name}.yaml"));
    }
    println!("## status latency ({exits} exits; includes the bench's 2 ms /pods poll)");
    println!("| median ms | p99 ms | max ms |\n|---|---|---|");
    println!(
        "| {:.1} | {:.1} | {:.1} |\n",
        percentile(&mut latency, 50.0),
        percentile(&mut latency, 99.0),
        percentile(&mut latency, 100.0)
    );

    // 3. 110 pods.
    node.wait_for("the exit pods to go", Duration::from_secs(60), |n| {
        n.sandboxes(None).is_empty().then_some(())
    });
    let filled = Instant::now();
    for i in 0..pods {
        node.write_manifest(
            &format!("p{i}.yaml"),
            &busybox_pod(
                &format!("p{i}"),
                "  terminationGracePeriodSeconds: 0\n",
                "exec sleep 3600",
            ),
        );
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
    println!(
        "## {pods} pods (all started in {:.1} s)",
        filled.elapsed().as_secs_f64()
    );
    let health = std::sync::Arc::new(Health::new(
        Duration::from_secs(600),
        Duration::from_secs(600),
    ));
    let store = std::sync::Arc::new(wasmlet::status::StatusStore::default());
    let config = PlegConfig {
        relist_period: Duration::from_secs(1),
        evented_relist_period: Duration::from_secs(10),
        events: None,
    };
    let mut pleg = Pleg::new(cri.clone(), "bench", config, health, store);
    let mut relists = Vec::new();
    for _ in 0..30 {
        let started = Instant::now();
        runtime.block_on(pleg.relist()).unwrap();
        relists.push(ms(started.elapsed()));
    }
    let uid = node.pod("p0").unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    let mut fetches = Vec::new();
    for _ in 0..30 {
        let started = Instant::now();
        runtime
            .block_on(PodRuntimeStatus::fetch(&cri, &uid, "bench"))
            .unwrap();
        fetches.push(ms(started.elapsed()));
    }
    println!("| measure | median ms | p90 ms |\n|---|---|---|");
    println!(
        "| one relist (ListPodSandbox + ListContainers, diff) | {:.2} | {:.2} |",
        percentile(&mut relists, 50.0),
        percentile(&mut relists, 90.0)
    );
    println!(
        "| event path: one pod's runtime status (what an event costs) | {:.2} | {:.2} |",
        percentile(&mut fetches, 50.0),
        percentile(&mut fetches, 90.0)
    );

    std::thread::sleep(Duration::from_secs(5));
    let pid = node.pid().expect("wasmlet pid");
    let window = Duration::from_secs(30);
    let before = cpu_ticks(pid);
    std::thread::sleep(window);
    let ticks = cpu_ticks(pid) - before;
    let hz = rustix::param::clock_ticks_per_second() as f64;
    println!(
        "\nidle CPU of wasmlet at {pods} pods over {}s: {:.2} % of one core ({ticks} ticks)",
        window.as_secs(),
        ticks as f64 / hz / window.as_secs_f64() * 100.0
    );
    for i in 0..pods {
        node.remove_manifest(&format!("p{i}.yaml"));
    }
    node.wait_for("the pods to go", Duration::from_secs(600), |n| {
        n.sandboxes(None).is_empty().then_some(())
    });
}
