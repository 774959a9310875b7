use super::*;
use wasmlet_plugin_sdk::QosClass;

fn pod(priority: i32, request: u64, usage: u64) -> PodInfo {
    PodInfo {
        priority,
        has_stats: true,
        qos: QosClass::Burstable,
        memory_request_bytes: request,
        memory_usage_bytes: usage,
        ..PodInfo::default()
    }
}

fn reading(ms: u64, full_percent: u32) -> NodePsi {
    let mut psi = NodePsi {
        read_unix_ms: ms,
        ..NodePsi::default()
    };
    psi.memory.full.avg10 = full_percent * 100;
    psi
}

fn guard(config: &str) -> PsiGuard {
    let mut guard = PsiGuard::default();
    guard.configure(config).expect("config");
    guard
}

#[test]
fn asks_only_after_pressure_held_for_the_configured_time() {
    let mut g = guard(r#"{"memoryFullAvg10Percent": 20, "forSeconds": 10}"#);
    let pods = [pod(0, 100, 50), pod(0, 100, 900)];
    let node = NodeInfo::default();
    assert_eq!(g.watch(&node, &reading(0, 25), &pods), Ok(None));
    assert_eq!(g.watch(&node, &reading(9_999, 30), &pods), Ok(None));
    let asked = g
        .watch(&node, &reading(10_000, 30), &pods)
        .expect("answers");
    let asked = asked.expect("asks to evict after 10 s");
    assert_eq!(asked.pods, [1], "only the pod above its request");
    assert!(
        asked.reason.contains("30.00% at or over 20% for 10 s"),
        "{}",
        asked.reason
    );
    // Counting starts again after a request.
    assert_eq!(g.watch(&node, &reading(15_000, 30), &pods), Ok(None));
}

#[test]
fn a_dip_below_the_limit_starts_the_count_again() {
    let mut g = guard(r#"{"memoryFullAvg10Percent": 20, "forSeconds": 10}"#);
    let pods = [pod(0, 0, 100)];
    let node = NodeInfo::default();
    assert_eq!(g.watch(&node, &reading(0, 50), &pods), Ok(None));
    assert_eq!(g.watch(&node, &reading(5_000, 19), &pods), Ok(None));
    assert_eq!(g.watch(&node, &reading(12_000, 50), &pods), Ok(None));
    assert!(g
        .watch(&node, &reading(22_000, 50), &pods)
        .expect("answers")
        .is_some());
}

#[test]
fn lowest_priority_first_then_most_above_request() {
    let mut critical = pod(-10, 0, 10_000);
    critical.is_critical = true;
    let pods = [
        pod(100, 0, 5_000),
        pod(0, 100, 300),
        pod(0, 100, 2_000),
        critical,
        pod(-5, 1_000, 900),
    ];
    // The critical pod and the one within its request are left out.
    assert_eq!(candidates(&pods), [2, 1, 0]);
}

#[test]
fn config_is_checked_and_self_check_passes() {
    let mut g = PsiGuard::default();
    assert!(g.configure(r#"{"memoryFullAvg10Percent": 0}"#).is_err());
    assert!(g.configure(r#"{"memoryFullAvg10Percent": 101}"#).is_err());
    let unknown = g.configure(r#"{"limit": 1}"#).unwrap_err();
    assert!(unknown.contains("unknown field"), "{unknown}");
    assert!(g.configure("{}").is_ok());
    assert_eq!(g.config, Config::default());
    assert_eq!(g.self_check(), Ok(()));
    assert_eq!(guard(r#"{"forSeconds": 0}"#).self_check(), Ok(()));
}

#[test]
fn some_triggers_only_when_configured_and_names_itself() {
    let pods = [pod(0, 0, 100)];
    let node = NodeInfo::default();
    let some_only = |ms, percent: u32| {
        let mut psi = reading(ms, 0);
        psi.memory.some.avg10 = percent * 100;
        psi
    };
    let mut full_only = guard(r#"{"memoryFullAvg10Percent": 20, "forSeconds": 0}"#);
    assert_eq!(full_only.watch(&node, &some_only(0, 90), &pods), Ok(None));

    let mut g =
        guard(r#"{"memoryFullAvg10Percent": 20, "memorySomeAvg10Percent": 15, "forSeconds": 5}"#);
    assert_eq!(g.watch(&node, &some_only(0, 16), &pods), Ok(None));
    let asked = g
        .watch(&node, &some_only(5_000, 18), &pods)
        .expect("answers")
        .expect("asks after 5 s of some over 15%");
    assert_eq!(asked.pods, [0]);
    assert!(
        asked.reason == "memory some avg10 18.00% at or over 15% for 5 s",
        "{}",
        asked.reason
    );
    // Full over its limit names full, whatever some reads.
    let mut g =
        guard(r#"{"memoryFullAvg10Percent": 20, "memorySomeAvg10Percent": 15, "forSeconds": 0}"#);
    let mut both = reading(0, 30);
    both.memory.some.avg10 = 4000;
    let asked = g
        .watch(&node, &both, &pods)
        .expect("answers")
        .expect("asks");
    assert!(
        asked.reason.starts_with("memory full avg10 30.00%"),
        "{}",
        asked.reason
    );
}

#[test]
fn a_some_limit_outside_0_to_100_is_refused_by_name() {
    let mut g = PsiGuard::default();
    let err = g
        .configure(r#"{"memorySomeAvg10Percent": 0}"#)
        .expect_err("refused");
    assert!(
        err.contains("memorySomeAvg10Percent must be in (0, 100], got 0"),
        "{err}"
    );
}
