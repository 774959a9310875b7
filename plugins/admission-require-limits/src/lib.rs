//! Refuses pods whose containers lack CPU or memory limits, in chosen
//! namespaces (world `lifecycle-hooks`, `admit` only).
//!
//! Init containers count too: an init container without limits can starve
//! the node as well as a regular one. The reason names every offending
//! container and what it lacks.
//!
//! Config: `{"namespaces": ["prod", "payments"]}` (no namespace: admit all).

use serde::Deserialize;
use wasmlet_plugin_sdk::{config, export, host, AdmissionPod, LifecycleHooks};

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Config {
    namespaces: Vec<String>,
}

/// Limits required in `namespaces`.
#[derive(Debug, Default)]
pub struct RequireLimits {
    config: Config,
}

impl LifecycleHooks for RequireLimits {
    fn configure(&mut self, text: &str) -> Result<(), String> {
        self.config = config::parse(text)?;
        Ok(())
    }

    fn admit(&self, pod: &AdmissionPod) -> Result<(), String> {
        if self.config.namespaces.is_empty() {
            return Ok(());
        }
        let namespace = host::pod_namespace(pod.index);
        if !self.config.namespaces.contains(&namespace) {
            return Ok(());
        }
        let missing: Vec<String> = pod
            .containers
            .iter()
            .filter_map(|c| {
                let lacks = match (c.has_cpu_limit, c.has_memory_limit) {
                    (true, true) => return None,
                    (false, true) => "cpu limit",
                    (true, false) => "memory limit",
                    (false, false) => "cpu and memory limits",
                };
                Some(format!("container \"{}\" has no {lacks}", c.name))
            })
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        host::log(
            wasmlet_plugin_sdk::LogLevel::Info,
            "pod refused: missing limits",
            &[
                ("namespace", &namespace),
                ("pod", &host::pod_name(pod.index)),
            ],
        );
        Err(format!(
            "namespace \"{namespace}\" requires cpu and memory limits: {}",
            missing.join("; ")
        ))
    }
}

export!(RequireLimits as hooks);

#[cfg(test)]
mod tests;
