//! A lifecycle-hooks plugin that misbehaves in the export its config names (`hostile`);
//! `strings` refuses with the worst reason.

use hostile::{act, Config};
use wasmlet_plugin_sdk::{export, AdmissionPod, LifecycleHooks, PodAccess};

#[derive(Default)]
pub struct Hostile(Config);

impl LifecycleHooks for Hostile {
    fn configure(&mut self, text: &str) -> Result<(), String> {
        self.0 = Config::configure(text)?;
        Ok(())
    }

    fn self_check(&self) -> Result<(), String> {
        act(&self.0, "self-check")
    }

    fn admit(&self, _: &AdmissionPod) -> Result<(), String> {
        act(&self.0, "admit")
    }

    fn post_start(&self, _: &str, _: &dyn PodAccess) -> Result<(), String> {
        act(&self.0, "post-start")
    }

    fn pre_stop(&self, _: &str, _: u32, _: &dyn PodAccess) -> Result<(), String> {
        act(&self.0, "pre-stop")
    }
}

export!(Hostile as hooks);
