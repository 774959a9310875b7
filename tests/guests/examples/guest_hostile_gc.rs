//! A GC plugin that misbehaves in the export its config names (`hostile`).

use hostile::{act, Config};
use wasmlet_plugin_sdk::{export, DeadContainer, DiskInfo, GcStrategy, ImageInfo};

#[derive(Default)]
pub struct Hostile(Config);

impl GcStrategy for Hostile {
    fn configure(&mut self, text: &str) -> Result<(), String> {
        self.0 = Config::configure(text)?;
        Ok(())
    }

    fn self_check(&self) -> Result<(), String> {
        act(&self.0, "self-check")
    }

    fn plan_images(&self, _: &DiskInfo, images: &[ImageInfo]) -> Result<Vec<u32>, String> {
        if self.0.long_answer("plan-images") {
            return Ok(hostile::long_answer(images.len()));
        }
        act(&self.0, "plan-images")?;
        Ok(Vec::new())
    }

    fn plan_containers(&self, dead: &[DeadContainer]) -> Result<Vec<u32>, String> {
        if self.0.long_answer("plan-containers") {
            return Ok(hostile::long_answer(dead.len()));
        }
        act(&self.0, "plan-containers")?;
        Ok(Vec::new())
    }
}

export!(Hostile as gc);
