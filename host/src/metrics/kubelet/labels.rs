//! The label sets of upstream's kubelet series that are computed, not given: CRI operation
//! types, GC reasons, the `static` label.

use super::Labels;

/// A label set of one pair.
pub fn label(name: &'static str, value: impl Into<String>) -> Labels {
    vec![(name, value.into())]
}

/// Upstream's `reason` of `kubelet_image_garbage_collected_total` (`image_gc_manager.go`):
/// `age` for an image removed for being unused longer than `imageMaximumGCAge`, `space` for
/// one removed to bring disk usage under the low threshold.
pub fn image_gc_reason(expired: bool) -> Labels {
    label("reason", if expired { "age" } else { "space" })
}

/// Upstream's `static` label: `"true"` for a pod that is not from the API server.
pub fn static_label(is_static: bool) -> Labels {
    label("static", if is_static { "true" } else { "false" })
}

/// Upstream's `operation_type` for a CRI RPC (`ListPodSandbox` -> `list_podsandbox`,
/// `ContainerStatus` -> `container_status`), as `instrumented_services.go` names them.
pub fn operation_type(rpc: &str) -> String {
    let rpc = rpc.replace("PodSandbox", "Podsandbox");
    let mut out = String::with_capacity(rpc.len() + 4);
    for (i, c) in rpc.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_types_are_upstreams() {
        assert_eq!(operation_type("ListPodSandbox"), "list_podsandbox");
        assert_eq!(operation_type("RunPodSandbox"), "run_podsandbox");
        assert_eq!(operation_type("PodSandboxStatus"), "podsandbox_status");
        assert_eq!(operation_type("ContainerStatus"), "container_status");
        assert_eq!(operation_type("ExecSync"), "exec_sync");
        assert_eq!(operation_type("ImageFsInfo"), "image_fs_info");
        assert_eq!(operation_type("Version"), "version");
    }
}
