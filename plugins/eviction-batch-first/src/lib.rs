//! Evicts batch pods before anything else and never touches protected
//! namespaces (world `eviction-policy`).
//!
//! Starts from the upstream order for the pressure at hand, drops pods in
//! `protectNamespaces`, and moves pods labelled `batchLabel=batchValue` to
//! the front, keeping the upstream order within each group. Only the pods
//! of the ranked list are looked up (one namespace and one label each).
//!
//! Config:
//! `{"protectNamespaces": ["kube-system"], "batchLabel": "workload-class", "batchValue": "batch"}`

use serde::Deserialize;
use wasmlet_plugin_sdk::defaults::eviction;
use wasmlet_plugin_sdk::{
    config, export, host, EvictionPolicy, LogLevel, NodeInfo, PodInfo, SignalObservation,
};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Config {
    protect_namespaces: Vec<String>,
    batch_label: String,
    batch_value: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            protect_namespaces: Vec::new(),
            batch_label: "workload-class".into(),
            batch_value: "batch".into(),
        }
    }
}

/// Batch first, protected namespaces never.
#[derive(Debug, Default)]
pub struct BatchFirst {
    config: Config,
}

impl EvictionPolicy for BatchFirst {
    fn configure(&mut self, text: &str) -> Result<(), String> {
        let config: Config = config::parse(text)?;
        if config.batch_label.is_empty() {
            return Err("batchLabel must not be empty".into());
        }
        self.config = config;
        Ok(())
    }

    fn rank(
        &self,
        _node: &NodeInfo,
        pressure: &[SignalObservation],
        pods: &[PodInfo],
    ) -> Result<Vec<u32>, String> {
        let c = &self.config;
        let (batch, rest): (Vec<u32>, Vec<u32>) = eviction::rank(pressure, pods)
            .into_iter()
            .filter(|&i| !c.protect_namespaces.contains(&host::pod_namespace(i)))
            .partition(|&i| {
                host::pod_label(i, &c.batch_label).as_deref() == Some(c.batch_value.as_str())
            });
        // Fields are built only when the host would write them (host.log-enabled, 0.1.1).
        if host::log_enabled(LogLevel::Debug) {
            let (batch_pods, other_pods) = (batch.len().to_string(), rest.len().to_string());
            host::log(
                LogLevel::Debug,
                "batch pods first",
                &[("batch", &batch_pods), ("other", &other_pods)],
            );
        }
        Ok(batch.into_iter().chain(rest).collect())
    }
}

export!(BatchFirst as eviction);

#[cfg(test)]
mod tests;
