//! An eviction plugin that answers nonsense the host must refuse.
//!
//! Config `{"answer": ...}`:
//! - `"mixed"` (default): `[n, n + 7, 0, 0]` for `n` pods: out of range
//!   and a duplicate;
//! - `"out-of-range"`: `[n, u32::MAX]`;
//! - `"duplicates"`: every index twice, `[0, 0, 1, 1, ...]`;
//! - `"critical"`: only the critical and static pods (valid indices; the
//!   host must skip them, never evict them);
//! - `"error"`: `Err("guest-nonsense: ...")`.

use serde::Deserialize;
use wasmlet_plugin_sdk::{config, export, EvictionPolicy, NodeInfo, PodInfo, SignalObservation};

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Config {
    answer: String,
}

#[derive(Default)]
pub struct Nonsense {
    answer: String,
}

impl EvictionPolicy for Nonsense {
    fn configure(&mut self, text: &str) -> Result<(), String> {
        let c: Config = config::parse(text)?;
        match c.answer.as_str() {
            "" | "mixed" | "out-of-range" | "duplicates" | "critical" | "error" => {}
            other => return Err(format!("unknown answer {other:?}")),
        }
        self.answer = c.answer;
        Ok(())
    }

    fn rank(
        &self,
        _: &NodeInfo,
        _: &[SignalObservation],
        pods: &[PodInfo],
    ) -> Result<Vec<u32>, String> {
        let n = pods.len() as u32;
        Ok(match self.answer.as_str() {
            "out-of-range" => vec![n, u32::MAX],
            "duplicates" => (0..n).flat_map(|i| [i, i]).collect(),
            "critical" => (0..n)
                .filter(|&i| !pods[i as usize].is_evictable())
                .collect(),
            "error" => return Err("guest-nonsense: refusing to rank, as configured".into()),
            _ => vec![n, n + 7, 0, 0],
        })
    }
}

export!(Nonsense as eviction);

#[cfg(test)]
mod tests {
    use wasmlet_plugin_sdk::fixtures::{EvictionCase, PodFixture};
    use wasmlet_plugin_sdk::EvictionPolicy;

    use super::Nonsense;

    #[test]
    fn every_answer_is_refused_by_the_host_check() {
        let case = EvictionCase::memory_pressure()
            .pod(PodFixture::new("a", "x"))
            .pod(PodFixture::new("kube-system", "etcd").static_pod());
        for answer in ["mixed", "out-of-range", "duplicates", "critical", "error"] {
            let mut p = Nonsense::default();
            p.configure(&format!(r#"{{"answer": "{answer}"}}"#))
                .unwrap();
            assert!(case.rank_names(&p).is_err(), "{answer} passed the check");
        }
    }
}
