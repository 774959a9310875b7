//! An eviction plugin built straight from the frozen `wit/history/0.1.0` (no SDK, which follows
//! the current contract): it imports `wasmlet:plugin/host@0.1.0` and `pod-meta@0.1.0`, and
//! proves that a host serving 0.1.2 still links and calls a component of the previous version.
//! It ranks the pods newest-index first and logs once per call through the 0.1.0 `host.log`;
//! the pod-meta lookup shows the old import answered.

wit_bindgen::generate!({
    path: "../../wit/history/0.1.0",
    world: "wasmlet:plugin/eviction-policy@0.1.0",
});

use wasmlet::plugin::{host, pod_meta};

struct ReverseOrder;

impl Guest for ReverseOrder {
    fn configure(_config: String) -> Result<(), String> {
        Ok(())
    }

    fn self_check() -> Result<(), String> {
        Ok(())
    }

    fn rank(node: NodeInfo, _: Vec<SignalObservation>, _: Vec<u64>) -> Result<Vec<u32>, String> {
        let first = pod_meta::pod_name(0);
        host::log(host::LogLevel::Info, "contract 0.1.0 plugin ranked", &[("first".into(), first)]);
        Ok((0..node.pod_count).rev().collect())
    }
}

export!(ReverseOrder);
