use core::marker::PhantomData;

use super::state;
use crate::bindings::gc::{wasmlet::plugin::types as wit, Guest};
use crate::{types, GcStrategy};

/// Implements the generated `Guest` for a [`GcStrategy`].
pub struct GcGuest<T>(PhantomData<T>);

impl<T: GcStrategy + Default + 'static> Guest for GcGuest<T> {
    fn configure(config: String) -> Result<(), String> {
        state::reset(|p: &mut T| p.configure(&config))
    }

    fn self_check() -> Result<(), String> {
        state::with(|p: &mut T| p.self_check())
    }

    fn plan_images(disk: wit::DiskInfo, images: Vec<wit::ImageInfo>) -> Result<Vec<u32>, String> {
        let disk = types::DiskInfo {
            capacity_bytes: disk.capacity_bytes,
            available_bytes: disk.available_bytes,
            bytes_to_free: disk.bytes_to_free,
            min_age_ms: disk.min_age_ms,
            max_age_ms: disk.max_age_ms,
        };
        let images: Vec<_> = images
            .into_iter()
            .map(|i| types::ImageInfo {
                size_bytes: i.size_bytes,
                first_seen_unix_ms: i.first_seen_unix_ms,
                last_used_unix_ms: i.last_used_unix_ms,
                in_use: i.in_use,
                pinned: i.pinned,
            })
            .collect();
        state::with(|p: &mut T| p.plan_images(&disk, &images))
    }

    fn plan_containers(dead: Vec<wit::DeadContainer>) -> Result<Vec<u32>, String> {
        let dead: Vec<_> = dead
            .into_iter()
            .map(|d| types::DeadContainer {
                pod_deleted: d.pod_deleted,
                finished_unix_ms: d.finished_unix_ms,
                per_container_rank: d.per_container_rank,
                unit: d.unit,
                pod: d.pod,
            })
            .collect();
        state::with(|p: &mut T| p.plan_containers(&dead))
    }
}
