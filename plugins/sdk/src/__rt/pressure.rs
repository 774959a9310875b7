use core::marker::PhantomData;

use super::eviction::{node_info, EvictionGuest};
use super::state;
use crate::bindings::eviction::{wasmlet::plugin::types as wit, Guest as EvictionExports};
use crate::bindings::pressure_eviction::exports::wasmlet::plugin::pressure_watch::Guest as WatchExports;
use crate::bindings::pressure_eviction::Guest;
use crate::{types, PressureWatch};

/// Implements the generated exports of `pressure-eviction-policy` for a [`PressureWatch`]:
/// the eviction world's three as [`EvictionGuest`] does, and `watch`.
pub struct PressureEvictionGuest<T>(PhantomData<T>);

impl<T: PressureWatch + Default + 'static> Guest for PressureEvictionGuest<T> {
    fn configure(config: String) -> Result<(), String> {
        <EvictionGuest<T> as EvictionExports>::configure(config)
    }

    fn self_check() -> Result<(), String> {
        <EvictionGuest<T> as EvictionExports>::self_check()
    }

    fn rank(
        node: wit::NodeInfo,
        pressure: Vec<wit::SignalObservation>,
        pods: Vec<u64>,
    ) -> Result<Vec<u32>, String> {
        <EvictionGuest<T> as EvictionExports>::rank(node, pressure, pods)
    }
}

impl<T: PressureWatch + Default + 'static> WatchExports for PressureEvictionGuest<T> {
    fn watch(
        node: wit::NodeInfo,
        psi: wit::NodePsi,
        pods: Vec<u64>,
    ) -> Result<Option<wit::EvictNow>, String> {
        let node = node_info(node);
        let psi = node_psi(psi);
        let pods = wasmlet_policy_default::packed::pods_from_words(&pods)?;
        let answer = state::with(|p: &mut T| p.watch(&node, &psi, &pods))?;
        Ok(answer.map(|evict| wit::EvictNow {
            pods: evict.pods,
            reason: evict.reason,
        }))
    }
}

fn line(l: wit::PsiLine) -> types::PsiLine {
    types::PsiLine {
        avg10: l.avg10,
        avg60: l.avg60,
        avg300: l.avg300,
        total_us: l.total_us,
    }
}

fn resource(r: wit::PsiResource) -> types::PsiResource {
    types::PsiResource {
        some: line(r.some),
        full: line(r.full),
    }
}

fn node_psi(p: wit::NodePsi) -> types::NodePsi {
    types::NodePsi {
        cpu: resource(p.cpu),
        memory: resource(p.memory),
        io: resource(p.io),
        read_unix_ms: p.read_unix_ms,
    }
}
