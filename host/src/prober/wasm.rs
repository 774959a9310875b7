//! Probe plugins: a container's probe handed to a `probe-handler` component by annotation.
//! The plugin runs off the executor, scoped to this pod alone (http-get to the pod IP,
//! tcp-connect to its declared ports, exec in the containers its entry grants), until the earlier of the
//! probe's timeout and the plugin's own `deadlineMs`. A fault (trap, deadline, memory cap, no such plugin) fails the probe with the
//! reason and never reaches anything else.

use super::{Outcome, ProbeConfig, ProbeKind, ProbeTarget};
use crate::cri::CriClient;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmlet_plugin_host::{ExecFn, ExecOutput, PodScope, ProbeOutcome, ProbeRequest};

/// A scoped exec for plugins: runs in a container of this pod only, through CRI ExecSync, on
/// the runtime of the calling task (plugins run on blocking threads, which may block on it).
/// The call ends at `timeout` to the millisecond whatever the runtime does (CRI counts whole
/// seconds): the request is dropped, which cancels it, and the runtime kills the command.
pub fn exec_fn(cri: CriClient, containers: Arc<HashMap<String, String>>) -> Option<ExecFn> {
    let handle = tokio::runtime::Handle::try_current().ok()?;
    Some(Arc::new(
        move |container: &str, command: &[String], timeout: Duration| {
            let id = containers
                .get(container)
                .ok_or_else(|| format!("container {container:?} is not running"))?;
            let call = cri.exec_sync(id, command.to_vec(), timeout);
            let response = handle
                .block_on(async { tokio::time::timeout(timeout, call).await })
                .map_err(|_| {
                    format!(
                        "exec in {container:?}: the deadline of {} ms passed",
                        timeout.as_millis()
                    )
                })?
                .map_err(|e| format!("exec in {container:?}: {e}"))?;
            let cap = |mut bytes: Vec<u8>| {
                bytes.truncate(16 * 1024);
                bytes
            };
            Ok(ExecOutput {
                exit_code: response.exit_code,
                stdout: cap(response.stdout),
                stderr: cap(response.stderr),
            })
        },
    ))
}

/// The scope of a plugin serving one pod until `deadline`.
pub fn scope(
    cri: &CriClient,
    pod_ip: &str,
    ports: &[u16],
    containers: &Arc<HashMap<String, String>>,
    deadline: Instant,
) -> PodScope {
    let mut names: Vec<String> = containers.keys().cloned().collect();
    names.sort();
    PodScope {
        pod_ip: pod_ip.to_string(),
        ports: ports.to_vec(),
        containers: names,
        deadline,
        exec: exec_fn(cri.clone(), containers.clone()),
    }
}

/// Runs the probe plugin `plugin` once for `target`'s container.
pub async fn probe(
    target: &ProbeTarget,
    config: &ProbeConfig,
    plugin: &str,
    args: &str,
) -> Outcome {
    let scope = scope(
        &target.cri,
        &target.pod_ip,
        &target.pod_ports,
        &target.pod_containers,
        Instant::now() + config.timeout,
    );
    let request = ProbeRequest {
        args: args.to_string(),
        timeout_ms: config.timeout.as_millis().min(u128::from(u32::MAX)) as u32,
        pod_ip: target.pod_ip.clone(),
        ports: target.pod_ports.clone(),
        containers: scope.containers.clone(),
        container: target.container.clone(),
        kind: match config.kind {
            ProbeKind::Liveness => wasmlet_plugin_host::ProbeKind::Liveness,
            ProbeKind::Readiness => wasmlet_plugin_host::ProbeKind::Readiness,
            ProbeKind::Startup => wasmlet_plugin_host::ProbeKind::Startup,
        },
    };
    let registry = target.plugins.clone();
    let name = plugin.to_string();
    let answer = tokio::task::spawn_blocking(move || registry.probe(&name, &request, scope)).await;
    match answer {
        Ok(result) => match result.outcome {
            ProbeOutcome::Success => Outcome::Success,
            ProbeOutcome::Failure => Outcome::Failure(result.message),
            ProbeOutcome::Unknown => Outcome::Unknown(result.message),
        },
        Err(error) => Outcome::Failure(format!("probe plugin {plugin}: {error}")),
    }
}
