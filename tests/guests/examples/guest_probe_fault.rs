//! A probe plugin that faults on demand, for the containment tests: the probe's
//! args (the pod annotation) say how: `{"fault": "panic" | "unreachable" |
//! "loop" | "alloc" | "none"}`. `none` answers success, so one component can
//! serve a healthy pod beside a faulty one.

use serde::Deserialize;
use wasmlet_plugin_sdk::{config, export, PodAccess, ProbeHandler, ProbeRequest, ProbeResult};

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Args {
    fault: String,
}

#[derive(Default)]
pub struct ProbeFault;

impl ProbeHandler for ProbeFault {
    fn check(&self, request: &ProbeRequest, _pod: &dyn PodAccess) -> ProbeResult {
        let args: Args = match config::parse_as("probe args", &request.args) {
            Ok(args) => args,
            Err(e) => return ProbeResult::failure(e),
        };
        match args.fault.as_str() {
            "panic" => panic!("guest-probe-fault: deliberate panic"),
            "unreachable" => {
                #[cfg(target_arch = "wasm32")]
                core::arch::wasm32::unreachable();
                #[allow(unreachable_code)]
                ProbeResult::failure("unreachable")
            }
            "loop" => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "alloc" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            _ => ProbeResult::success("no fault asked for"),
        }
    }
}

export!(ProbeFault as probe);
