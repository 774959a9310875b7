//! A preStop hook that asks the server to drain, then waits (world
//! `lifecycle-hooks`, `pre-stop` only).
//!
//! On preStop it sends `GET :<port><path>` to the pod, then waits `waitMs`
//! so in-flight requests finish before the container gets SIGTERM. The wait
//! never eats the whole grace period: it leaves `reserveMs` for the
//! container's own shutdown (upstream floors the stop grace at 2 s anyway).
//! A failed drain request fails the hook (event `FailedPreStopHook`) without
//! waiting: the server was not told to drain.
//!
//! Config: `{"port": 8080, "path": "/drain", "waitMs": 5000, "reserveMs": 2000,
//! "requestTimeoutMs": 2000, "containers": ["app"]}` (`port` is required; an
//! empty `containers` means every container).

use serde::Deserialize;
use wasmlet_plugin_sdk::{config, export, host, LifecycleHooks, LogLevel, PodAccess};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Config {
    port: u16,
    path: String,
    wait_ms: u32,
    reserve_ms: u32,
    request_timeout_ms: u32,
    containers: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            port: 0,
            path: "/drain".into(),
            wait_ms: 5000,
            reserve_ms: 2000,
            request_timeout_ms: 2000,
            containers: Vec::new(),
        }
    }
}

/// Drain, then wait.
#[derive(Debug, Default)]
pub struct Drain {
    config: Config,
}

impl LifecycleHooks for Drain {
    fn configure(&mut self, text: &str) -> Result<(), String> {
        let config: Config = config::parse(text)?;
        if config.port == 0 {
            return Err("config needs the \"port\" of the drain endpoint".into());
        }
        if !config.path.starts_with('/') {
            return Err(format!("path {:?} must start with '/'", config.path));
        }
        self.config = config;
        Ok(())
    }

    fn pre_stop(&self, container: &str, grace_ms: u32, pod: &dyn PodAccess) -> Result<(), String> {
        let c = &self.config;
        if !c.containers.is_empty() && !c.containers.iter().any(|name| name == container) {
            return Ok(());
        }
        let budget = grace_ms.saturating_sub(c.reserve_ms);
        let started = host::now_unix_ms();
        let response = pod
            .http_get(
                c.port,
                &c.path,
                &[],
                c.request_timeout_ms.min(budget.max(1)),
            )
            .map_err(|e| format!("drain request GET :{}{} failed: {e}", c.port, c.path))?;
        if !response.is_success() {
            return Err(format!(
                "drain request GET :{}{} answered HTTP {}",
                c.port, c.path, response.status
            ));
        }
        let spent = host::now_unix_ms()
            .saturating_sub(started)
            .min(u64::from(u32::MAX)) as u32;
        let wait = c.wait_ms.min(budget.saturating_sub(spent));
        let wait_text = wait.to_string();
        host::log(
            LogLevel::Info,
            "draining",
            &[("container", container), ("wait_ms", &wait_text)],
        );
        if wait > 0 {
            pod.sleep(wait)?;
        }
        Ok(())
    }
}

export!(Drain as hooks);

#[cfg(test)]
mod tests;
