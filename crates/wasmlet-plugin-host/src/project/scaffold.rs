//! `wasmlet plugin new NAME --world W --lang L`: a project that builds as it is, with a
//! native test of its logic, in the layout of the language's SDK examples.

use super::sdk::SdkTree;
use super::{plugin_error, Lang, Manifest, MANIFEST};
use crate::config::{is_dns_label, World};
use crate::tool::ToolError;
use std::path::{Path, PathBuf};

/// Writes a ready-to-build plugin project `name` for `world` in `lang` into `dir/name`.
/// `sdk` is the language's SDK directory (default: found in the wasmlet checkout above the
/// current directory or the binary); the project refers to it by absolute path.
pub fn new_plugin(
    name: &str,
    world: World,
    lang: Lang,
    dir: &Path,
    sdk: Option<&Path>,
) -> Result<PathBuf, ToolError> {
    let root = std::path::absolute(dir.join(name)).map_err(|e| plugin_error(dir, e.to_string()))?;
    let fail = |message: String| plugin_error(&root, message);
    if !is_dns_label(name) {
        return Err(fail(
            "the name must be a lowercase DNS label, e.g. my-eviction-policy".into(),
        ));
    }
    if !lang.worlds().contains(&world) {
        return Err(fail(format!(
            "the {} SDK has no {} world",
            lang.as_str(),
            world.as_str()
        )));
    }
    if root.exists() {
        return Err(fail("already exists".into()));
    }
    let start = std::env::current_dir().map_err(|e| fail(e.to_string()))?;
    let tree = SdkTree::find(lang, sdk, &start).map_err(fail)?;
    let files = project_files(name, world, lang, tree.sdk());
    for (file, text) in files {
        let path = root.join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| plugin_error(parent, e.to_string()))?;
        }
        std::fs::write(&path, text).map_err(|e| plugin_error(&path, e.to_string()))?;
    }
    Ok(root)
}

/// The files of a new project, as (path in the project, contents).
pub(super) fn project_files(
    name: &str,
    world: World,
    lang: Lang,
    sdk: &Path,
) -> Vec<(&'static str, String)> {
    let type_name = type_name(name);
    let fill = |template: &str| {
        template
            .replace("@NAME@", name)
            .replace("@TYPE@", &type_name)
            .replace("@WORLD@", world.as_str())
            .replace("@SDK@", &sdk.display().to_string())
    };
    let manifest = Manifest {
        name: name.to_string(),
        world,
        lang,
        sdk: Some(sdk.to_path_buf()),
    };
    let manifest = format!(
        "# What `wasmlet plugin build` needs to know; `wasmlet plugin new` wrote it.\n{}",
        serde_yaml::to_string(&manifest).unwrap_or_default()
    );
    let mut files = vec![(MANIFEST, manifest), ("README.md", fill(readme(lang)))];
    match lang {
        Lang::Rust => {
            files.push(("Cargo.toml", fill(RUST_CARGO)));
            files.push(("src/lib.rs", rust_lib(world, &type_name)));
        }
        Lang::Go => {
            files.push(("go.mod", fill(GO_MOD)));
            let (main, test) = match world {
                World::EvictionPolicy => (GO_EVICTION, GO_EVICTION_TEST),
                World::ProbeHandler => (GO_PROBE, GO_PROBE_TEST),
                World::GcStrategy => (GO_GC, GO_GC_TEST),
                World::LifecycleHooks => (GO_HOOKS, GO_HOOKS_TEST),
            };
            files.push(("main.go", fill(main)));
            files.push(("main_test.go", fill(test)));
        }
        Lang::Python => {
            let (app, test) = match world {
                World::EvictionPolicy => (PY_EVICTION, PY_EVICTION_TEST),
                World::ProbeHandler => (PY_PROBE, PY_PROBE_TEST),
                World::GcStrategy => (PY_GC, PY_GC_TEST),
                World::LifecycleHooks => (PY_HOOKS, PY_HOOKS_TEST),
            };
            files.push(("app.py", fill(app)));
            files.push(("test_app.py", fill(test)));
        }
        Lang::Js => {
            files.push(("package.json", fill(JS_PACKAGE)));
            let (component, plugin, test) = match world {
                World::EvictionPolicy => (JS_EVICTION_COMPONENT, JS_EVICTION, JS_EVICTION_TEST),
                World::ProbeHandler => (JS_PROBE_COMPONENT, JS_PROBE, JS_PROBE_TEST),
                World::GcStrategy => (JS_GC_COMPONENT, JS_GC, JS_GC_TEST),
                World::LifecycleHooks => (JS_HOOKS_COMPONENT, JS_HOOKS, JS_HOOKS_TEST),
            };
            files.push(("component.js", fill(component)));
            files.push(("plugin.js", fill(plugin)));
            files.push(("plugin.test.js", fill(test)));
        }
    }
    files
}

/// `my-eviction-policy` -> `MyEvictionPolicy`, a type name in every SDK language.
fn type_name(name: &str) -> String {
    let joined: String = name
        .split('-')
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect();
    if joined.starts_with(|c: char| c.is_ascii_digit()) {
        format!("Plugin{joined}")
    } else {
        joined
    }
}

fn readme(lang: Lang) -> &'static str {
    match lang {
        Lang::Rust => "# @NAME@\n\nA wasmlet plugin (world `@WORLD@`) in Rust.\n\n```sh\ncargo test                       # the logic, natively, with the SDK's fixtures\nwasmlet plugin build .           # -> @NAME@.wasm (cargo, target wasm32-wasip2)\nwasmlet plugin validate @NAME@.wasm\n```\n",
        Lang::Go => "# @NAME@\n\nA wasmlet plugin (world `@WORLD@`) in Go.\n\n```sh\ngo test ./...                    # the logic, natively, with the SDK's plugintest\nwasmlet plugin build .           # -> @NAME@.wasm (GOOS=wasip1, then made a component)\nwasmlet plugin validate @NAME@.wasm\n```\n",
        Lang::Python => "# @NAME@\n\nA wasmlet plugin (world `@WORLD@`) in Python.\n\n```sh\nPYTHONPATH=@SDK@ python3 -m unittest   # the logic, natively, with the SDK's testing module\nwasmlet plugin build .           # -> @NAME@.wasm (componentize-py from PyPI)\nwasmlet plugin validate @NAME@.wasm\n```\n",
        Lang::Js => "# @NAME@\n\nA wasmlet plugin (world `@WORLD@`) in JavaScript.\n\n```sh\nnpm install                      # links the SDK (no download)\nnode --test                      # the logic, natively, with the SDK's testing module\nwasmlet plugin build .           # -> @NAME@.wasm (jco / componentize-js from npm)\nwasmlet plugin validate @NAME@.wasm\n```\n",
    }
}

const RUST_CARGO: &str = "[package]\nname = \"@NAME@\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\ncrate-type = [\"cdylib\", \"rlib\"]\n\n\
[dependencies]\nwasmlet-plugin-sdk = { path = \"@SDK@\" }\n\n# A workspace of its own.\n[workspace]\n\n\
[profile.release]\nopt-level = \"s\"\nlto = true\nstrip = true\n";

fn rust_lib(world: World, type_name: &str) -> String {
    match world {
        World::EvictionPolicy => format!(
            "//! An eviction policy: the pods with the most restarts go first.\n\n\
             use wasmlet_plugin_sdk::{{export, EvictionPolicy, NodeInfo, PodInfo, SignalObservation}};\n\n\
             #[derive(Default)]\npub struct {type_name};\n\n\
             impl EvictionPolicy for {type_name} {{\n    fn rank(&self, _: &NodeInfo, _: &[SignalObservation], pods: &[PodInfo]) -> Result<Vec<u32>, String> {{\n        \
             let mut order: Vec<u32> = (0..pods.len() as u32).filter(|&i| pods[i as usize].is_evictable()).collect();\n        \
             order.sort_by_key(|&i| std::cmp::Reverse(pods[i as usize].restart_count));\n        Ok(order)\n    }}\n}}\n\n\
             export!({type_name} as eviction);\n\n\
             #[cfg(test)]\nmod tests {{\n    use super::*;\n    use wasmlet_plugin_sdk::fixtures::{{EvictionCase, PodFixture}};\n\n    \
             #[test]\n    fn flappy_pods_go_first() {{\n        let case = EvictionCase::memory_pressure()\n            \
             .pod(PodFixture::new(\"default\", \"calm\").restarts(0))\n            .pod(PodFixture::new(\"default\", \"flappy\").restarts(9));\n        \
             assert_eq!(case.rank_names(&{type_name}).unwrap(), [\"default/flappy\", \"default/calm\"]);\n    }}\n}}\n"
        ),
        World::GcStrategy => format!(
            "//! A GC strategy; the trait's defaults are upstream's image and container GC order:\n\
             //! override `plan_images` or `plan_containers` to change them.\n\n\
             use wasmlet_plugin_sdk::{{export, GcStrategy}};\n\n#[derive(Default)]\npub struct {type_name};\n\n\
             impl GcStrategy for {type_name} {{}}\n\nexport!({type_name} as gc);\n\n\
             #[cfg(test)]\nmod tests {{\n    use super::*;\n    use wasmlet_plugin_sdk::fixtures::{{GcCase, ImageFixture}};\n\n    \
             #[test]\n    fn least_recently_used_unused_images_go_first() {{\n        let case = GcCase::new()\n            \
             .bytes_to_free(150 << 20)\n            .image(ImageFixture::new(\"recent:1\").used_minutes_ago(10))\n            \
             .image(ImageFixture::new(\"old:1\").used_minutes_ago(300))\n            .image(ImageFixture::new(\"running:1\").in_use());\n        \
             let plan = case.plan_image_tags(&{type_name}).unwrap();\n        assert_eq!(plan, [\"old:1\", \"recent:1\"]);\n    }}\n}}\n"
        ),
        World::ProbeHandler => format!(
            "//! A probe: succeeds when the pod accepts TCP connections on its first declared port.\n\n\
             use wasmlet_plugin_sdk::{{export, PodAccess, ProbeHandler, ProbeRequest, ProbeResult}};\n\n\
             #[derive(Default)]\npub struct {type_name};\n\n\
             impl ProbeHandler for {type_name} {{\n    fn check(&self, request: &ProbeRequest, pod: &dyn PodAccess) -> ProbeResult {{\n        \
             let Some(&port) = request.ports.first() else {{ return ProbeResult::failure(\"the pod declares no port\") }};\n        \
             match pod.tcp_connect(port, request.timeout_ms) {{\n            Ok(()) => ProbeResult::success(format!(\"port {{port}} accepts connections\")),\n            \
             Err(error) => ProbeResult::failure(error),\n        }}\n    }}\n}}\n\nexport!({type_name} as probe);\n\n\
             #[cfg(test)]\nmod tests {{\n    use super::*;\n    use wasmlet_plugin_sdk::fixtures::MockPod;\n    use wasmlet_plugin_sdk::ProbeOutcome;\n\n    \
             #[test]\n    fn succeeds_once_the_first_port_accepts() {{\n        let request = ProbeRequest::new(\"\");\n        \
             let closed = {type_name}.check(&request, &MockPod::new());\n        assert_eq!(closed.outcome, ProbeOutcome::Failure, \"{{closed:?}}\");\n        \
             let open = {type_name}.check(&request, &MockPod::new().tcp_open(8080));\n        assert_eq!(open.outcome, ProbeOutcome::Success, \"{{open:?}}\");\n    }}\n}}\n"
        ),
        World::LifecycleHooks => format!(
            "//! Lifecycle hooks; the trait's defaults admit every pod and do nothing at\n\
             //! post-start and pre-stop: override `admit`, `post_start` or `pre_stop`.\n\n\
             use wasmlet_plugin_sdk::{{export, LifecycleHooks}};\n\n#[derive(Default)]\npub struct {type_name};\n\n\
             impl LifecycleHooks for {type_name} {{}}\n\nexport!({type_name} as hooks);\n\n\
             #[cfg(test)]\nmod tests {{\n    use super::*;\n    use wasmlet_plugin_sdk::fixtures::HookCase;\n    use wasmlet_plugin_sdk::AdmissionContainer;\n\n    \
             #[test]\n    fn admits_every_pod() {{\n        let case = HookCase::new(\"default\", \"web\").container(AdmissionContainer::new(\"app\"));\n        \
             assert_eq!(case.admit(&{type_name}), Ok(()));\n    }}\n}}\n"
        ),
    }
}

const GO_MOD: &str = "module @NAME@\n\ngo 1.24\n\nrequire wasmlet.dev/plugin v0.0.0\n\nreplace wasmlet.dev/plugin => @SDK@\n";

const GO_EVICTION: &str = r#"// Command @NAME@ is a wasmlet eviction policy: the pods with the most
// restarts go first.
package main

import (
	"cmp"
	"slices"

	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/eviction"
)

// @TYPE@ is the policy.
type @TYPE@ struct{ plugin.NoSelfCheck }

// Configure takes the plugin config (JSON); this policy has none.
func (*@TYPE@) Configure(config string) error { return plugin.ParseConfig(config, &struct{}{}) }

// Rank lists the evictable pods, most restarts first.
func (*@TYPE@) Rank(_ *plugin.NodeInfo, _ []plugin.SignalObservation, pods []plugin.PodInfo) ([]uint32, error) {
	var order []uint32
	for i := range pods {
		if pods[i].IsEvictable() {
			order = append(order, uint32(i))
		}
	}
	slices.SortStableFunc(order, func(a, b uint32) int {
		return cmp.Compare(pods[b].RestartCount, pods[a].RestartCount)
	})
	return order, nil
}

func init() { eviction.Export(&@TYPE@{}) }

func main() {}
"#;

const GO_EVICTION_TEST: &str = r#"package main

import (
	"slices"
	"testing"

	"wasmlet.dev/plugin/plugintest"
)

func TestFlappyPodsGoFirst(t *testing.T) {
	c := plugintest.MemoryPressure().Pod(
		plugintest.NewPod("default", "calm"),
		plugintest.NewPod("default", "flappy").Restarts(9),
		plugintest.NewPod("kube-system", "static").Static(),
	)
	got, err := c.RankNames(&@TYPE@{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"default/flappy", "default/calm"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
"#;

const GO_PROBE: &str = r#"// Command @NAME@ is a wasmlet probe: succeeds when GET /healthz on the
// pod's first declared port answers 2xx.
package main

import (
	"fmt"

	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/probe"
)

// @TYPE@ is the probe.
type @TYPE@ struct{ plugin.NoSelfCheck }

// Configure takes the plugin config (JSON); this probe has none.
func (*@TYPE@) Configure(config string) error { return plugin.ParseConfig(config, &struct{}{}) }

// Check GETs /healthz.
func (*@TYPE@) Check(req *plugin.ProbeRequest, pod plugin.PodAccess) plugin.ProbeResult {
	if len(req.Ports) == 0 {
		return plugin.Failed("the pod declares no port")
	}
	resp, err := pod.HTTPGet(req.Ports[0], "/healthz", nil, req.TimeoutMs)
	if err != nil {
		return plugin.Failed(err.Error())
	}
	if resp.Status < 200 || resp.Status > 299 {
		return plugin.Failed(fmt.Sprintf("/healthz answered %d", resp.Status))
	}
	return plugin.Succeeded(fmt.Sprintf("/healthz answered %d", resp.Status))
}

func init() { probe.Export(&@TYPE@{}) }

func main() {}
"#;

const GO_PROBE_TEST: &str = r#"package main

import (
	"testing"

	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/plugintest"
)

func TestHealthz(t *testing.T) {
	c := plugintest.NewProbeCase("", 8080)
	if got := c.Check(&@TYPE@{}); got.Outcome != plugin.Failure {
		t.Fatalf("nothing listening: %+v", got)
	}
	c.Pod.Serve(8080, "/healthz", 200, "ok")
	if got := c.Check(&@TYPE@{}); got.Outcome != plugin.Success {
		t.Fatalf("serving: %+v", got)
	}
}
"#;

const GO_GC: &str = r#"// Command @NAME@ is a wasmlet GC strategy: the least recently used images
// first until enough is freed, and every dead container but the newest of each
// container (all of them once the pod is deleted).
package main

import (
	"cmp"
	"slices"

	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/gc"
)

// @TYPE@ is the strategy.
type @TYPE@ struct{ plugin.NoSelfCheck }

// Configure takes the plugin config (JSON); this strategy has none.
func (*@TYPE@) Configure(config string) error { return plugin.ParseConfig(config, &struct{}{}) }

// PlanImages deletes unused, unpinned images, least recently used first.
func (*@TYPE@) PlanImages(disk *plugin.DiskInfo, images []plugin.ImageInfo) ([]uint32, error) {
	var candidates []uint32
	for i, image := range images {
		if !image.InUse && !image.Pinned {
			candidates = append(candidates, uint32(i))
		}
	}
	slices.SortStableFunc(candidates, func(a, b uint32) int {
		return cmp.Compare(images[a].LastUsedUnixMs, images[b].LastUsedUnixMs)
	})
	var plan []uint32
	var freed uint64
	for _, i := range candidates {
		if freed >= disk.BytesToFree {
			break
		}
		plan = append(plan, i)
		freed += images[i].SizeBytes
	}
	return plan, nil
}

// PlanContainers keeps the newest dead container of each container.
func (*@TYPE@) PlanContainers(dead []plugin.DeadContainer) ([]uint32, error) {
	var plan []uint32
	for i, c := range dead {
		if c.PodDeleted || c.PerContainerRank > 0 {
			plan = append(plan, uint32(i))
		}
	}
	return plan, nil
}

func init() { gc.Export(&@TYPE@{}) }

func main() {}
"#;

const GO_GC_TEST: &str = r#"package main

import (
	"slices"
	"testing"

	"wasmlet.dev/plugin"
)

func TestLeastRecentlyUsedFirst(t *testing.T) {
	images := []plugin.ImageInfo{
		{SizeBytes: 100, LastUsedUnixMs: 30},
		{SizeBytes: 100, LastUsedUnixMs: 10},
		{SizeBytes: 100, LastUsedUnixMs: 20, InUse: true},
	}
	got, err := (&@TYPE@{}).PlanImages(&plugin.DiskInfo{BytesToFree: 150}, images)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint32{1, 0}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
"#;

const GO_HOOKS: &str = r#"// Command @NAME@ is a wasmlet admission plugin: it refuses pods with a
// container that sets no memory limit.
package main

import (
	"fmt"

	"wasmlet.dev/plugin"
	"wasmlet.dev/plugin/hooks"
)

// @TYPE@ is the plugin; it has no post-start or pre-stop hook.
type @TYPE@ struct {
	plugin.NoSelfCheck
	plugin.NoContainerHooks
}

// Configure takes the plugin config (JSON); this plugin has none.
func (*@TYPE@) Configure(config string) error { return plugin.ParseConfig(config, &struct{}{}) }

// Admit refuses a pod with a container without a memory limit.
func (*@TYPE@) Admit(pod *plugin.AdmissionPod) error {
	for _, c := range pod.Containers {
		if !c.HasMemoryLimit {
			return fmt.Errorf("container %s sets no memory limit", c.Name)
		}
	}
	return nil
}

func init() { hooks.Export(&@TYPE@{}) }

func main() {}
"#;

const GO_HOOKS_TEST: &str = r#"package main

import (
	"testing"

	"wasmlet.dev/plugin"
)

func TestMemoryLimitRequired(t *testing.T) {
	pod := &plugin.AdmissionPod{Containers: []plugin.AdmissionContainer{{Name: "app", HasMemoryLimit: true}}}
	if err := (&@TYPE@{}).Admit(pod); err != nil {
		t.Fatal(err)
	}
	pod.Containers = append(pod.Containers, plugin.AdmissionContainer{Name: "sidecar"})
	if err := (&@TYPE@{}).Admit(pod); err == nil {
		t.Fatal("admitted a container without a memory limit")
	}
}
"#;

const PY_EVICTION: &str = r#""""@NAME@: a wasmlet eviction policy. The pods with the most restarts go first."""

from wasmlet_plugin import parse_config
from wasmlet_plugin.eviction import EvictionPolicy, world


class @TYPE@(EvictionPolicy):
    def configure(self, text):
        parse_config(text, {})

    def rank(self, node, pressure, pods):
        order = [i for i, pod in enumerate(pods) if pod.is_evictable()]
        order.sort(key=lambda i: -pods[i].restart_count)
        return order


WitWorld = world(@TYPE@)
"#;

const PY_EVICTION_TEST: &str = r#"import unittest

from wasmlet_plugin.testing import EvictionCase, Pod

from app import @TYPE@


class RankTest(unittest.TestCase):
    def test_flappy_pods_go_first(self):
        case = EvictionCase().pod(
            Pod("default", "calm"),
            Pod("default", "flappy").restarts(9),
            Pod("kube-system", "static").static(),
        )
        self.assertEqual(case.rank_names(@TYPE@()), ["default/flappy", "default/calm"])


if __name__ == "__main__":
    unittest.main()
"#;

const PY_PROBE: &str = r#""""@NAME@: a wasmlet probe. Succeeds when GET /healthz on the pod's first declared port answers 2xx."""

from wasmlet_plugin import ProbeResult, parse_config
from wasmlet_plugin.probe import ProbeHandler, world


class @TYPE@(ProbeHandler):
    def configure(self, text):
        parse_config(text, {})

    def check(self, request, pod):
        if not request.ports:
            return ProbeResult.failure("the pod declares no port")
        try:
            response = pod.http_get(request.ports[0], "/healthz", timeout_ms=request.timeout_ms)
        except Exception as e:
            return ProbeResult.failure(str(e))
        if 200 <= response.status <= 299:
            return ProbeResult.success(f"/healthz answered {response.status}")
        return ProbeResult.failure(f"/healthz answered {response.status}")


WitWorld = world(@TYPE@)
"#;

const PY_PROBE_TEST: &str = r#"import unittest

from wasmlet_plugin import ProbeOutcome
from wasmlet_plugin.testing import MockPod, probe_request

from app import @TYPE@


class CheckTest(unittest.TestCase):
    def test_healthz(self):
        pod = MockPod()
        self.assertEqual(@TYPE@().check(probe_request("", 8080), pod).outcome, ProbeOutcome.FAILURE)
        pod.serve(8080, "/healthz", 200, "ok")
        self.assertEqual(@TYPE@().check(probe_request("", 8080), pod).outcome, ProbeOutcome.SUCCESS)


if __name__ == "__main__":
    unittest.main()
"#;

const PY_GC: &str = r#""""@NAME@: a wasmlet GC strategy. The least recently used unused images go first
until enough is freed, and every dead container but the newest of each container (all of
them once the pod is deleted). GcStrategy's own plans are upstream's: drop a method to use them."""

from wasmlet_plugin import parse_config
from wasmlet_plugin.gc import GcStrategy, world


class @TYPE@(GcStrategy):
    def configure(self, text):
        parse_config(text, {})

    def plan_images(self, disk, images):
        candidates = [i for i, image in enumerate(images) if not image.in_use and not image.pinned]
        candidates.sort(key=lambda i: images[i].last_used_unix_ms)
        plan, freed = [], 0
        for i in candidates:
            if freed >= disk.bytes_to_free:
                break
            plan.append(i)
            freed += images[i].size_bytes
        return plan

    def plan_containers(self, dead):
        return [i for i, c in enumerate(dead) if c.pod_deleted or c.per_container_rank > 0]


WitWorld = world(@TYPE@)
"#;

const PY_GC_TEST: &str = r#"import unittest

from wasmlet_plugin.testing import MI, GcCase, Image

from app import @TYPE@


class PlanTest(unittest.TestCase):
    def test_least_recently_used_images_first(self):
        case = GcCase().bytes_to_free(150 * MI).image(
            Image("recent:1").used_minutes_ago(10),
            Image("old:1").used_minutes_ago(300),
            Image("running:1").used_minutes_ago(900).in_use(),
        )
        self.assertEqual(case.plan_image_tags(@TYPE@()), ["old:1", "recent:1"])

    def test_the_newest_dead_container_of_each_container_stays(self):
        case = GcCase().dead_container(0, 0, 5).dead_container(0, 1, 10).dead_container(1, 0, 1).pod_deleted(1)
        self.assertEqual(case.plan_containers(@TYPE@()), [1, 2])


if __name__ == "__main__":
    unittest.main()
"#;

const PY_HOOKS: &str = r#""""@NAME@: a wasmlet admission plugin. Refuses pods with a container that sets no memory limit."""

from wasmlet_plugin import parse_config
from wasmlet_plugin.hooks import LifecycleHooks, world


class @TYPE@(LifecycleHooks):
    def configure(self, text):
        parse_config(text, {})

    def admit(self, pod):
        for c in pod.containers:
            if not c.has_memory_limit:
                raise ValueError(f"container {c.name} sets no memory limit")


WitWorld = world(@TYPE@)
"#;

const PY_HOOKS_TEST: &str = r#"import unittest

from wasmlet_plugin import AdmissionContainer, AdmissionPod, QosClass

from app import @TYPE@


def pod(*containers):
    return AdmissionPod(0, 0, QosClass.BURSTABLE, False, False, list(containers))


class AdmitTest(unittest.TestCase):
    def test_memory_limit_required(self):
        limited = AdmissionContainer("app", False, True, True, True, True)
        @TYPE@().admit(pod(limited))
        with self.assertRaises(ValueError):
            @TYPE@().admit(pod(limited, AdmissionContainer("sidecar", False, True, True, True, False)))


if __name__ == "__main__":
    unittest.main()
"#;

const JS_PACKAGE: &str = r#"{
  "name": "@NAME@",
  "version": "0.1.0",
  "private": true,
  "type": "module",
  "description": "A wasmlet plugin (world @WORLD@)",
  "scripts": {
    "test": "node --test"
  },
  "dependencies": {
    "wasmlet-plugin-sdk": "file:@SDK@"
  }
}
"#;

const JS_EVICTION_COMPONENT: &str = r#"// The component's entry: the WIT imports, and the policy as the world's exports.
import * as host from 'wasmlet:plugin/host@0.1.2';
import * as podMeta from 'wasmlet:plugin/pod-meta@0.1.2';
import { evictionWorld } from 'wasmlet-plugin-sdk/eviction';
import { @TYPE@ } from './plugin.js';

export const { configure, selfCheck, rank } = evictionWorld(@TYPE@, { host, podMeta });
"#;

const JS_EVICTION: &str = r#"// @NAME@: a wasmlet eviction policy. The pods with the most restarts go first.
import { isEvictable, parseConfig } from 'wasmlet-plugin-sdk';

export class @TYPE@ {
  configure(text) {
    parseConfig(text, {});
  }

  rank(node, pressure, pods) {
    const order = [];
    pods.forEach((pod, i) => { if (isEvictable(pod)) order.push(i); });
    return order.sort((a, b) => pods[b].restartCount - pods[a].restartCount || a - b);
  }
}
"#;

const JS_EVICTION_TEST: &str = r#"import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EvictionCase, Pod } from 'wasmlet-plugin-sdk/testing';
import { @TYPE@ } from './plugin.js';

test('flappy pods go first', () => {
  const c = new EvictionCase().pod(
    new Pod('default', 'calm'),
    new Pod('default', 'flappy').restarts(9),
    new Pod('kube-system', 'static').static(),
  );
  assert.deepEqual(c.rankNames(new @TYPE@()), ['default/flappy', 'default/calm']);
});
"#;

const JS_PROBE_COMPONENT: &str = r#"// The component's entry: the WIT imports, and the probe as the world's exports.
import * as host from 'wasmlet:plugin/host@0.1.2';
import * as podAccess from 'wasmlet:plugin/pod-access@0.1.2';
import { probeWorld } from 'wasmlet-plugin-sdk/probe';
import { @TYPE@ } from './plugin.js';

export const { configure, selfCheck, check } = probeWorld(@TYPE@, { host, podAccess });
"#;

const JS_PROBE: &str = r#"// @NAME@: a wasmlet probe. Succeeds when GET /healthz on the pod's first declared port answers 2xx.
import { ProbeResult, parseConfig } from 'wasmlet-plugin-sdk';

export class @TYPE@ {
  configure(text) {
    parseConfig(text, {});
  }

  check(request, pod) {
    if (request.ports.length === 0) return ProbeResult.failure('the pod declares no port');
    let response;
    try {
      response = pod.httpGet(request.ports[0], '/healthz', [], request.timeoutMs);
    } catch (e) {
      return ProbeResult.failure(String(e?.message ?? e));
    }
    const message = `/healthz answered ${response.status}`;
    return response.status >= 200 && response.status <= 299
      ? ProbeResult.success(message)
      : ProbeResult.failure(message);
  }
}
"#;

const JS_PROBE_TEST: &str = r#"import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MockPod, probeRequest } from 'wasmlet-plugin-sdk/testing';
import { @TYPE@ } from './plugin.js';

test('healthz', () => {
  const pod = new MockPod();
  assert.equal(new @TYPE@().check(probeRequest('', 8080), pod).outcome, 'failure');
  pod.serve(8080, '/healthz', 200, 'ok');
  assert.equal(new @TYPE@().check(probeRequest('', 8080), pod).outcome, 'success');
});
"#;

const JS_GC_COMPONENT: &str = r#"// The component's entry: the WIT imports, and the strategy as the world's exports.
import * as host from 'wasmlet:plugin/host@0.1.2';
import * as podMeta from 'wasmlet:plugin/pod-meta@0.1.2';
import { gcWorld } from 'wasmlet-plugin-sdk/gc';
import { @TYPE@ } from './plugin.js';

export const { configure, selfCheck, planImages, planContainers } = gcWorld(@TYPE@, { host, podMeta });
"#;

const JS_GC: &str = r#"// @NAME@: a wasmlet GC strategy. The least recently used unused images go first until
// enough is freed, and every dead container but the newest of each container (all of them
// once the pod is deleted). Without planImages or planContainers, a strategy plans
// upstream's way (wasmlet-plugin-sdk/gc's defaults). u64 fields are BigInt above 2^52:
// sums are done in BigInt.
import { parseConfig } from 'wasmlet-plugin-sdk';

export class @TYPE@ {
  configure(text) {
    parseConfig(text, {});
  }

  planImages(disk, images) {
    const candidates = [];
    images.forEach((image, i) => { if (!image.inUse && !image.pinned) candidates.push(i); });
    const used = (i) => images[i].lastUsedUnixMs;
    candidates.sort((a, b) => (used(a) < used(b) ? -1 : used(a) > used(b) ? 1 : a - b));
    const plan = [];
    let freed = 0n;
    for (const i of candidates) {
      if (freed >= BigInt(disk.bytesToFree)) break;
      plan.push(i);
      freed += BigInt(images[i].sizeBytes);
    }
    return plan;
  }

  planContainers(dead) {
    const plan = [];
    dead.forEach((c, i) => { if (c.podDeleted || c.perContainerRank > 0) plan.push(i); });
    return plan;
  }
}
"#;

const JS_GC_TEST: &str = r#"import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GcCase, Image, MI } from 'wasmlet-plugin-sdk/testing';
import { @TYPE@ } from './plugin.js';

test('least recently used images first', () => {
  const c = new GcCase().bytesToFree(150n * MI).image(
    new Image('recent:1').usedMinutesAgo(10),
    new Image('old:1').usedMinutesAgo(300),
    new Image('running:1').usedMinutesAgo(900).inUse(),
  );
  assert.deepEqual(c.planImageTags(new @TYPE@()), ['old:1', 'recent:1']);
});

test('the newest dead container of each container stays', () => {
  const c = new GcCase().deadContainer(0, 0, 5).deadContainer(0, 1, 10).deadContainer(1, 0, 1).podDeleted(1);
  assert.deepEqual(c.planContainers(new @TYPE@()), [1, 2]);
});
"#;

const JS_HOOKS_COMPONENT: &str = r#"// The component's entry: the WIT imports, and the hooks as the world's exports.
import * as host from 'wasmlet:plugin/host@0.1.2';
import * as podMeta from 'wasmlet:plugin/pod-meta@0.1.2';
import * as podAccess from 'wasmlet:plugin/pod-access@0.1.2';
import { hooksWorld } from 'wasmlet-plugin-sdk/hooks';
import { @TYPE@ } from './plugin.js';

export const { configure, selfCheck, admit, postStart, preStop } =
  hooksWorld(@TYPE@, { host, podMeta, podAccess });
"#;

const JS_HOOKS: &str = r#"// @NAME@: a wasmlet admission plugin. Refuses pods with a container that sets no memory limit.
import { parseConfig } from 'wasmlet-plugin-sdk';

export class @TYPE@ {
  configure(text) {
    parseConfig(text, {});
  }

  admit(pod) {
    for (const c of pod.containers) {
      if (!c.hasMemoryLimit) throw new Error(`container ${c.name} sets no memory limit`);
    }
  }
}
"#;

const JS_HOOKS_TEST: &str = r#"import { test } from 'node:test';
import assert from 'node:assert/strict';
import { @TYPE@ } from './plugin.js';

const container = (name, hasMemoryLimit) => ({
  name, isInit: false, hasCpuRequest: true, hasMemoryRequest: true, hasCpuLimit: true, hasMemoryLimit,
});

test('a memory limit is required', () => {
  const pod = { index: 0, priority: 0, qos: 'burstable', isStatic: false, isCritical: false, containers: [container('app', true)] };
  new @TYPE@().admit(pod);
  pod.containers.push(container('sidecar', false));
  assert.throws(() => new @TYPE@().admit(pod), /sidecar sets no memory limit/);
});
"#;
