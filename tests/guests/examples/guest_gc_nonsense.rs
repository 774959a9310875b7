//! A GC plugin that plans what the host must never do.
//!
//! Config `{"answer": ...}`:
//! - `"mixed"` (default): images: every image in use or pinned, then
//!   `n` (out of range); containers: `[m]` (out of range) for `m` dead;
//! - `"in-use"`: images: only those in use or pinned (valid indices: the
//!   host must skip them, not delete them); containers: upstream's plan;
//! - `"out-of-range"`: images `[n, u32::MAX]`, containers `[m, m]`.

use serde::Deserialize;
use wasmlet_plugin_sdk::defaults::gc::{plan_containers, ContainerGcPolicy};
use wasmlet_plugin_sdk::{config, export, DeadContainer, DiskInfo, GcStrategy, ImageInfo};

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Config {
    answer: String,
}

#[derive(Default)]
pub struct GcNonsense {
    answer: String,
}

impl GcStrategy for GcNonsense {
    fn configure(&mut self, text: &str) -> Result<(), String> {
        let c: Config = config::parse(text)?;
        match c.answer.as_str() {
            "" | "mixed" | "in-use" | "out-of-range" => {}
            other => return Err(format!("unknown answer {other:?}")),
        }
        self.answer = c.answer;
        Ok(())
    }

    fn plan_images(&self, _: &DiskInfo, images: &[ImageInfo]) -> Result<Vec<u32>, String> {
        let n = images.len() as u32;
        let protected = (0..n).filter(|&i| images[i as usize].in_use || images[i as usize].pinned);
        Ok(match self.answer.as_str() {
            "in-use" => protected.collect(),
            "out-of-range" => vec![n, u32::MAX],
            _ => protected.chain([n]).collect(),
        })
    }

    fn plan_containers(&self, dead: &[DeadContainer]) -> Result<Vec<u32>, String> {
        let m = dead.len() as u32;
        Ok(match self.answer.as_str() {
            "in-use" => plan_containers(dead, &ContainerGcPolicy::default()),
            "out-of-range" => vec![m, m],
            _ => vec![m],
        })
    }
}

export!(GcNonsense as gc);

#[cfg(test)]
mod tests {
    use wasmlet_plugin_sdk::fixtures::{GcCase, ImageFixture};
    use wasmlet_plugin_sdk::GcStrategy;

    use super::GcNonsense;

    #[test]
    fn every_image_answer_is_refused_by_the_host_check() {
        let case = GcCase::new()
            .bytes_to_free(1)
            .image(ImageFixture::new("app:v1").in_use())
            .image(ImageFixture::new("pause:3.9").pinned())
            .image(ImageFixture::new("old:1"));
        for answer in ["mixed", "in-use", "out-of-range"] {
            let mut s = GcNonsense::default();
            s.configure(&format!(r#"{{"answer": "{answer}"}}"#))
                .unwrap();
            assert!(
                case.plan_image_tags(&s).is_err(),
                "{answer} passed the check"
            );
        }
    }
}
