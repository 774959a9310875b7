//! `wasmlet plugin validate`, `test`, `new`, `build`, `push`, `pull` and `sign` driven through
//! the binary (the CLI wiring of the author tools in wasmlet-plugin-host), with real components
//! built from plugins/ and tests/guests/ (scripts/build-plugins.sh), and a real registry on
//! loopback for the OCI commands.

use std::path::{Path, PathBuf};
use wasmlet_test_support::components;

#[test]
fn plugin_validate_and_test_commands() {
    let run = |args: &[&str]| outcome(wasmlet().args(args));
    let file = components::EVICTION_BATCH_FIRST.path();
    let (ok, out, err) = run(&["plugin", "validate", file.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(
        out.contains("world: eviction-policy") && out.contains("sha256: "),
        "{out}"
    );

    let (ok, _, err) = run(&[
        "plugin",
        "validate",
        components::GUEST_LOOP.path().to_str().unwrap(),
        "--config",
        r#"{"faultIn":"self-check"}"#,
        "--deadline-ms",
        "20",
    ]);
    assert!(!ok);
    assert!(err.contains("deadline"), "{err}");
    let (ok, _, err) = run(&[
        "plugin",
        "validate",
        file.to_str().unwrap(),
        "--world",
        "gc-strategy",
    ]);
    assert!(
        !ok && err.contains("does not implement world gc-strategy"),
        "{err}"
    );

    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/plugins/snapshot.yaml");
    let (ok, out, err) = run(&[
        "plugin",
        "test",
        file.to_str().unwrap(),
        "--fixture",
        fixture.to_str().unwrap(),
        "--config",
        r#"{"protectNamespaces":["kube-system"]}"#,
    ]);
    assert!(ok, "{err}");
    let result: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(result["decidedBy"]["kind"], "plugin", "{result}");
    assert_eq!(
        result["order"][0], "default/report",
        "the batch pod first: {result}"
    );
    assert!(!result["order"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p == "kube-system/dns"));
    assert_eq!(result["builtInOrder"][0], "default/cache", "{result}");

    // A plugin that reads a file validates only with its directory granted.
    let keep = tempfile::tempdir().unwrap();
    std::fs::write(keep.path().join("prefixes"), "registry.local/\n").unwrap();
    let gc = components::GC_KEEP_PREFIXES.path();
    let config = r#"{"keepPrefixesFile":"/keep/prefixes"}"#;
    let (ok, _, err) = run(&[
        "plugin",
        "validate",
        gc.to_str().unwrap(),
        "--config",
        config,
    ]);
    assert!(!ok && err.contains("capabilities.directories"), "{err}");
    let grant = format!("{}:/keep", keep.path().display());
    let (ok, out, err) = run(&[
        "plugin",
        "validate",
        gc.to_str().unwrap(),
        "--config",
        config,
        "--grant-dir",
        &grant,
    ]);
    assert!(ok && out.contains("world: gc-strategy"), "{out}{err}");
    let (ok, _, err) = run(&[
        "plugin",
        "validate",
        gc.to_str().unwrap(),
        "--grant-dir",
        "x:rel",
    ]);
    assert!(!ok && err.contains("must be absolute"), "{err}");
}

/// An SDK example built by scripts/build-sdk-plugins.sh (target/sdk-plugins/LANG/NAME.wasm);
/// `None` when no SDK example was built, which CI never allows.
fn sdk_wasm(lang: &'static str, name: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/sdk-plugins");
    let (_, path) = sdk_plugins::components(&dir, name, &[lang])?.pop()?;
    Some(path)
}

use wasmlet_test_support::sdk_plugins;

/// `plugin validate` lists the WASI interfaces a component imports beyond what every plugin
/// gets, each with what the sandbox gives it under the grants, and still lists them when the
/// component is refused, so the missing grant shows.
#[test]
fn plugin_validate_shows_the_wasi_imports_and_what_the_grants_give() {
    let run = |args: &[&str]| outcome(wasmlet().args(args));
    let gc = components::GC_KEEP_PREFIXES.path();
    let gc = gc.to_str().unwrap();
    // A Rust plugin under deny-all: std imports the filesystem and the environment.
    let (ok, out, err) = run(&["plugin", "validate", gc]);
    assert!(ok, "{err}");
    let given = |out: &str, interface: &str| -> Vec<String> {
        out.lines()
            .filter_map(|line| line.trim().strip_prefix(interface)?.split_once(": "))
            .map(|(_version, given)| given.to_string())
            .collect()
    };
    assert_eq!(
        given(&out, "wasi:filesystem/preopens@"),
        ["no directory granted"],
        "{out}"
    );
    assert_eq!(given(&out, "wasi:cli/environment@"), ["empty"], "{out}");
    assert!(
        out.contains("wasi imports beyond io, clocks, random and cli stdio")
            && !out.contains("wasi:io/"),
        "what every plugin gets is not listed: {out}"
    );

    // The same with a directory and two variables granted: the names show, never the values.
    let keep = tempfile::tempdir().unwrap();
    std::fs::write(keep.path().join("prefixes"), "registry.local/\n").unwrap();
    let grant = format!("{}:/keep", keep.path().display());
    let (ok, out, err) = run(&[
        "plugin",
        "validate",
        gc,
        "--grant-dir",
        &grant,
        "--grant-env",
        "MODE=strict",
        "--grant-env",
        "TOKEN=a=b",
    ]);
    assert!(ok, "{err}");
    assert_eq!(
        given(&out, "wasi:filesystem/preopens@"),
        [format!("{} as /keep (read-only)", keep.path().display())],
        "{out}"
    );
    assert_eq!(
        given(&out, "wasi:cli/environment@"),
        ["MODE, TOKEN"],
        "{out}"
    );
    assert!(!out.contains("strict") && !out.contains("a=b"), "{out}");

    // Refused for want of its directory: the reason, naming the file, on stderr; the WASI
    // lines, showing no directory granted, on stdout.
    let (ok, out, err) = run(&[
        "plugin",
        "validate",
        gc,
        "--config",
        r#"{"keepPrefixesFile":"/keep/prefixes"}"#,
        "--grant-env",
        "MODE=strict",
    ]);
    assert!(!ok);
    assert!(
        err.contains(gc)
            && err.contains("configure refused")
            && err.contains("capabilities.directories"),
        "{err}"
    );
    assert!(out.contains(&format!("{gc}: refused")), "{out}");
    assert_eq!(
        given(&out, "wasi:filesystem/preopens@"),
        ["no directory granted"],
        "{out}"
    );
    assert_eq!(given(&out, "wasi:cli/environment@"), ["MODE"], "{out}");

    for (flag, message) in [
        ("=x", "the variable name is empty"),
        ("MODE", "expected NAME=VALUE"),
    ] {
        let (ok, _, err) = run(&["plugin", "validate", gc, "--grant-env", flag]);
        assert!(
            !ok && err.contains("--grant-env") && err.contains(message),
            "{err}"
        );
    }

    // A Python plugin (componentize-py): CPython's WASI build imports the filesystem, the
    // environment and sockets; under deny-all it gets none of them, and runs.
    let Some(python) = sdk_wasm("python", "eviction-batch-first") else {
        return;
    };
    let (ok, out, err) = run(&["plugin", "validate", python.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert_eq!(
        given(&out, "wasi:filesystem/preopens@"),
        ["no directory granted"],
        "{out}"
    );
    assert_eq!(given(&out, "wasi:cli/environment@"), ["empty"], "{out}");
    assert_eq!(
        given(&out, "wasi:sockets/tcp@"),
        ["denied (no TCP, UDP or name lookup)"],
        "{out}"
    );
}

/// Runs a command: whether it succeeded, its stdout and its stderr.
fn outcome(command: &mut std::process::Command) -> (bool, String, String) {
    let out = command.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs a command, failing the test with its output when it fails.
fn must(command: &mut std::process::Command, what: &str) -> String {
    let out = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn wasmlet() -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_wasmlet"));
    // The tools `plugin build` installs (componentize-py, jco, the Go componentizer) are
    // shared with scripts/build-sdk-plugins.sh.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    command.env("WASMLET_PLUGIN_TOOLS", root.join("target/sdk-tools"));
    // Never the target dir this test runs from, which cargo holds while the tests run: the Go
    // componentizer builds into the tools directory.
    command.env_remove("CARGO_TARGET_DIR");
    command
}

/// `plugin new` in every language and world writes a project whose native tests pass and that
/// `plugin build` makes into one component that validates; the four eviction policies decide
/// the same on the same snapshot, and the Python GC strategy plans as the built-in default.
#[test]
fn plugin_new_and_build_in_every_language() {
    let started = std::time::Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap();
    // One target dir for every generated Rust project (each is a workspace of its own), so the
    // SDK and its dependencies compile once for the native tests and once for wasm32-wasip2.
    let rust_target = root.join("target/plugin-new");
    let worlds = [
        "eviction-policy",
        "gc-strategy",
        "probe-handler",
        "lifecycle-hooks",
    ];
    // Two languages per thread: componentize-py, jco and the Go toolchain mostly keep one core
    // busy, and the test machines have two.
    std::thread::scope(|threads| {
        for langs in [["rust", "js"], ["go", "python"]] {
            let (dir, root, rust_target) = (dir.path(), &root, &rust_target);
            threads.spawn(move || {
                for lang in langs {
                    for world in worlds {
                        new_project_passes(lang, world, dir, root, rust_target);
                    }
                }
            });
        }
    });
    let again = wasmlet()
        .args([
            "plugin",
            "new",
            "my-go-gc-strategy",
            "--world",
            "gc-strategy",
            "--lang",
            "go",
        ])
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        !again.status.success()
            && String::from_utf8_lossy(&again.stderr).contains("already exists")
    );

    // The eviction policies (most restarts first) decide the same on the same snapshot.
    let fixture = root.join("examples/plugins/snapshot.yaml");
    let mut orders = Vec::new();
    for lang in ["rust", "go", "python", "js"] {
        let file = dir.path().join(format!(
            "my-{lang}-eviction-policy/my-{lang}-eviction-policy.wasm"
        ));
        let out = must(
            wasmlet()
                .args(["plugin", "test"])
                .arg(&file)
                .arg("--fixture")
                .arg(&fixture),
            &format!("plugin test ({lang})"),
        );
        let result: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(result["decidedBy"]["kind"], "plugin", "{lang}: {result}");
        orders.push((lang, result["order"].clone()));
    }
    assert!(
        orders.iter().all(|(_, order)| *order == orders[0].1),
        "the four languages disagree: {orders:?}"
    );

    // A GC strategy in Python (the template: least recently used unused images first) plans
    // as the built-in default on the gc fixture.
    let out = must(
        wasmlet()
            .args(["plugin", "test"])
            .arg(
                dir.path()
                    .join("my-python-gc-strategy/my-python-gc-strategy.wasm"),
            )
            .arg("--fixture")
            .arg(root.join("examples/plugins/gc-snapshot.yaml")),
        "plugin test (python gc)",
    );
    let result: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(result["decidedBy"]["kind"], "plugin", "{result}");
    assert_eq!(
        result["order"],
        serde_json::json!(["nginx:1.25", "redis:7"]),
        "{result}"
    );
    assert_eq!(result["order"], result["builtInOrder"], "{result}");

    // A project that does not say its language.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = wasmlet()
        .args(["plugin", "build"])
        .arg(&empty)
        .output()
        .unwrap();
    assert!(
        !out.status.success()
            && String::from_utf8_lossy(&out.stderr).contains("which language is it"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!(
        "plugin_new_and_build_in_every_language: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// `plugin new NAME --lang LANG --world WORLD` in `dir`: the project's own native tests pass
/// (a Rust project's with `rust_target` as its target dir), and `plugin build` makes it one
/// component that `plugin validate` passes.
fn new_project_passes(lang: &str, world: &str, dir: &Path, root: &Path, rust_target: &Path) {
    let step = std::time::Instant::now();
    let name = format!("my-{lang}-{world}");
    let out = wasmlet()
        .args(["plugin", "new", &name, "--world", world, "--lang", lang])
        .arg("--dir")
        .arg(dir)
        .current_dir(root)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "plugin new {name}: {stderr}");
    let project = dir.join(&name);
    // Each project's own native tests, as its README says to run them.
    match lang {
        "rust" => {
            let out = must(
                std::process::Command::new("cargo")
                    .arg("test")
                    .env("CARGO_TARGET_DIR", rust_target)
                    .current_dir(&project),
                &format!("cargo test in {name}"),
            );
            assert!(
                out.lines().any(|line| line
                    .strip_prefix("test result: ok. ")
                    .and_then(|rest| rest.split(' ').next())
                    .is_some_and(|passed| passed != "0")),
                "cargo test in {name} ran no test:\n{out}"
            );
        }
        "go" => drop(must(
            std::process::Command::new("go")
                .args(["test", "./..."])
                .current_dir(&project),
            &format!("go test in {name}"),
        )),
        "python" => drop(must(
            std::process::Command::new("python3")
                .args(["-m", "unittest"])
                .env("PYTHONPATH", root.join("plugins/sdk-python"))
                .current_dir(&project),
            &format!("python tests in {name}"),
        )),
        _ => {
            must(
                std::process::Command::new("npm")
                    .args(["install", "--no-audit", "--no-fund", "--silent"])
                    .current_dir(&project),
                &format!("npm install in {name}"),
            );
            must(
                std::process::Command::new("node")
                    .arg("--test")
                    .current_dir(&project),
                &format!("node --test in {name}"),
            );
        }
    }
    // One component from the project directory alone, that validates.
    let mut build = wasmlet();
    build.args(["plugin", "build"]).arg(&project);
    if lang == "rust" {
        build.env("CARGO_TARGET_DIR", rust_target);
    }
    let out = must(&mut build, &format!("plugin build {name}"));
    let file = project.join(format!("{name}.wasm"));
    assert!(
        out.contains(&format!("built {}", file.display()))
            && out.contains(&format!("world {world}")),
        "{out}"
    );
    // This test runs four toolchains on two cores beside the cluster tests, where a JS
    // component's first call has been seen to take longer than the default 50 ms; the deadline
    // itself is checked by `plugin_validate_and_test_commands`.
    let out = must(
        wasmlet()
            .args(["plugin", "validate", "--deadline-ms", "2000"])
            .arg(&file),
        &format!("plugin validate {name}"),
    );
    assert!(
        out.contains(&format!("world: {world}")) && out.contains("within deadlineMs 2000"),
        "{out}"
    );
    eprintln!(
        "{name}: tested, built and validated in {:.1} s",
        step.elapsed().as_secs_f64()
    );
}

/// The SDKs as their ecosystems package them (the Python wheel from `pip wheel`, the npm
/// tarball from `npm pack`, the Go module directory) make and build projects where no wasmlet
/// checkout is, with a copy of the wasmlet binary that has none above it either: without
/// `--sdk`, `plugin new` names the package to pass; with it, the SDK is installed into the
/// project, whose native tests pass, and `plugin build` makes a component that validates and
/// ranks as the other languages' do.
#[test]
fn plugin_new_and_build_outside_a_checkout_with_the_packaged_sdks() {
    let started = std::time::Instant::now();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap();
    let outside = tempfile::tempdir().unwrap();
    let outside = outside.path().canonicalize().unwrap();
    assert!(
        outside
            .ancestors()
            .all(|dir| !dir.join("wit/worlds.wit").exists()),
        "{} is inside a wasmlet checkout",
        outside.display()
    );
    // The binary, away from the checkout it was built in (a binary's own checkout is where an
    // SDK is looked for when none is given).
    let bin = outside.join("bin/wasmlet");
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_wasmlet"), &bin).unwrap();

    // The packages, made as each ecosystem makes them.
    let packages = outside.join("packages");
    std::fs::create_dir(&packages).unwrap();
    // From a copy: setuptools leaves build/ and *.egg-info beside the sources.
    let python_sources = outside.join("sdk-python");
    copy_dir(&root.join("plugins/sdk-python"), &python_sources);
    must(
        std::process::Command::new("python3")
            .args(["-m", "pip", "wheel", "--quiet", "--no-deps", "-w"])
            .arg(&packages)
            .arg(&python_sources),
        "pip wheel plugins/sdk-python",
    );
    must(
        std::process::Command::new("npm")
            .args(["pack", "--silent", "--pack-destination"])
            .arg(&packages)
            .arg("./plugins/sdk-js")
            .current_dir(&root),
        "npm pack ./plugins/sdk-js",
    );
    let go_module = packages.join("sdk-go");
    copy_dir(&root.join("plugins/sdk-go"), &go_module);
    let package = |extension: &str| -> PathBuf {
        let found: Vec<PathBuf> = std::fs::read_dir(&packages)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|e| e == extension))
            .collect();
        assert_eq!(found.len(), 1, "one .{extension} in {found:?}");
        found[0].clone()
    };
    let (wheel, tarball) = (package("whl"), package("tgz"));
    let file_name = |path: &Path| path.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        file_name(&wheel).starts_with("wasmlet_plugin-")
            && file_name(&wheel).ends_with("-py3-none-any.whl"),
        "{wheel:?}"
    );

    let work = outside.join("work");
    std::fs::create_dir(&work).unwrap();
    let wasmlet = || {
        let mut command = std::process::Command::new(&bin);
        command
            .env("WASMLET_PLUGIN_TOOLS", root.join("target/sdk-tools"))
            .env_remove("CARGO_TARGET_DIR")
            .current_dir(&work);
        command
    };
    let new = |lang: &str, sdk: Option<&Path>| {
        let mut command = wasmlet();
        command.args([
            "plugin",
            "new",
            &format!("outside-{lang}"),
            "--world",
            "eviction-policy",
            "--lang",
            lang,
        ]);
        if let Some(sdk) = sdk {
            command.arg("--sdk").arg(sdk);
        }
        outcome(&mut command)
    };

    // Without --sdk: the package to pass, by name, and how to make it.
    for (lang, names) in [
        (
            "python",
            vec![file_name(&wheel), "`pip wheel plugins/sdk-python`".into()],
        ),
        (
            "js",
            vec![file_name(&tarball), "`npm pack ./plugins/sdk-js`".into()],
        ),
        ("go", vec!["module directory of wasmlet.dev/plugin".into()]),
    ] {
        let (ok, _, err) = new(lang, None);
        assert!(
            !ok,
            "plugin new --lang {lang} found an SDK outside the checkout"
        );
        assert!(
            err.contains(&format!("wasmlet plugin new --lang {lang} needs the"))
                && err.contains("pass --sdk PATH to")
                && names.iter().all(|name| err.contains(name.as_str())),
            "{lang}: {err}"
        );
        assert!(!work.join(format!("outside-{lang}")).exists());
    }
    // Another language's package is refused, naming whose it is.
    let (ok, _, err) = new("js", Some(&wheel));
    assert!(!ok && err.contains("the Python SDK's package"), "{err}");

    // With it: installed into the project, tested, built, validated.
    let fixture = root.join("examples/plugins/snapshot.yaml");
    let orders = std::thread::scope(|threads| {
        let lanes = [
            vec![("python", wheel.as_path())],
            vec![("js", tarball.as_path()), ("go", go_module.as_path())],
        ];
        let handles: Vec<_> = lanes
            .into_iter()
            .map(|lane| {
                let (new, wasmlet, work, root, fixture) = (&new, &wasmlet, &work, &root, &fixture);
                threads.spawn(move || {
                    lane.into_iter()
                        .map(|(lang, sdk)| {
                            let step = std::time::Instant::now();
                            let (ok, out, err) = new(lang, Some(sdk));
                            assert!(ok, "plugin new --lang {lang} --sdk {sdk:?}: {err}");
                            assert!(out.contains("created"), "{out}");
                            let project = work.join(format!("outside-{lang}"));
                            outside_project_passes(lang, &project, root);
                            let out = must(
                                wasmlet()
                                    .args(["plugin", "build", "."])
                                    .current_dir(&project),
                                &format!("plugin build ({lang}, outside)"),
                            );
                            let file = project.join(format!("outside-{lang}.wasm"));
                            assert!(
                                out.contains(&format!("built {}", file.display()))
                                    && out.contains("world eviction-policy"),
                                "{out}"
                            );
                            let out = must(
                                // Generous, as in `new_project_passes`: two cores, four
                                // toolchains.
                                wasmlet()
                                    .args(["plugin", "validate", "--deadline-ms", "2000"])
                                    .arg(&file),
                                &format!("plugin validate ({lang}, outside)"),
                            );
                            assert!(out.contains("world: eviction-policy"), "{out}");
                            let out = must(
                                wasmlet()
                                    .args(["plugin", "test"])
                                    .arg(&file)
                                    .arg("--fixture")
                                    .arg(fixture),
                                &format!("plugin test ({lang}, outside)"),
                            );
                            let result: serde_json::Value = serde_json::from_str(&out).unwrap();
                            assert_eq!(result["decidedBy"]["kind"], "plugin", "{lang}: {result}");
                            eprintln!(
                                "outside-{lang}: made, tested, built and validated in {:.1} s",
                                step.elapsed().as_secs_f64()
                            );
                            (lang, result["order"].clone())
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|handle| handle.join().unwrap())
            .collect::<Vec<_>>()
    });
    assert_eq!(orders.len(), 3);
    assert!(
        orders.iter().all(|(_, order)| *order == orders[0].1),
        "the three languages disagree: {orders:?}"
    );
    eprintln!(
        "plugin_new_and_build_outside_a_checkout_with_the_packaged_sdks: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// A project `plugin new` made outside the checkout: it names nothing in the checkout, its SDK
/// is installed in it (Python, JS) or is the module directory given (Go), and its native tests
/// pass as its README says to run them.
fn outside_project_passes(lang: &str, project: &Path, root: &Path) {
    let checkout = root.to_string_lossy().into_owned();
    for entry in std::fs::read_dir(project).unwrap() {
        let path = entry.unwrap().path();
        if let Ok(text) = std::fs::read_to_string(&path) {
            assert!(
                !text.contains(&checkout),
                "{} names the checkout:\n{text}",
                path.display()
            );
        }
    }
    let readme = std::fs::read_to_string(project.join("README.md")).unwrap();
    match lang {
        "python" => {
            assert!(
                project
                    .join(".wasmlet/sdk-python/wasmlet_plugin/wit/worlds.wit")
                    .is_file(),
                "the wheel is not installed in {}",
                project.display()
            );
            assert!(
                readme.contains("PYTHONPATH=.wasmlet/sdk-python python3 -m unittest"),
                "{readme}"
            );
            must(
                std::process::Command::new("python3")
                    .args(["-m", "unittest"])
                    .env("PYTHONPATH", ".wasmlet/sdk-python")
                    .current_dir(project),
                "python tests (outside)",
            );
        }
        "js" => {
            let installed = project.join("node_modules/wasmlet-plugin-sdk");
            assert!(
                !installed.is_symlink() && installed.join("wit/worlds.wit").is_file(),
                "the tarball is not installed in {}",
                project.display()
            );
            must(
                std::process::Command::new("node")
                    .arg("--test")
                    .current_dir(project),
                "node --test (outside)",
            );
        }
        _ => drop(must(
            std::process::Command::new("go")
                .args(["test", "./..."])
                .current_dir(project),
            "go test (outside)",
        )),
    }
}

/// Copies an SDK's sources (a Go module directory, as a user would have it), without what
/// builds and test runs leave there.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if ["build", "__pycache__", "node_modules"].contains(&name.as_str())
            || name.ends_with(".egg-info")
        {
            continue;
        }
        let target = to.join(&name);
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

use wasmlet_test_support::oci_registry;

/// `openssl` with `args`, which must succeed.
/// A P-256 key pair made with openssl, as the docs say: `NAME.pem` (private) and `NAME.pub`.
fn p256_key_pair(dir: &Path, name: &str) {
    let private = format!("{name}.pem");
    let public = format!("{name}.pub");
    openssl(
        dir,
        &[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            &private,
        ],
    );
    openssl(dir, &["pkey", "-in", &private, "-pubout", "-out", &public]);
}

fn openssl(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn plugin_push_pull_and_sign_commands() {
    let Some(server) = oci_registry::TestRegistry::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| outcome(wasmlet().args(args).current_dir(dir.path()));
    let component = components::EVICTION_BATCH_FIRST.path();
    let tag = server.reference("cli/evict:v1");
    let (ok, out, err) = run(&["plugin", "push", component.to_str().unwrap(), &tag]);
    assert!(ok, "{err}");
    let digest = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("digest: "))
        .unwrap_or_else(|| panic!("no digest in {out}"))
        .to_string();
    assert!(out.contains("world: eviction-policy"), "{out}");

    // Only a plugin component is pushed.
    let garbage = dir.path().join("garbage.wasm");
    std::fs::write(&garbage, b"\0asm garbage").unwrap();
    let (ok, _, err) = run(&["plugin", "push", garbage.to_str().unwrap(), &tag]);
    assert!(!ok && err.contains("not a valid component"), "{err}");
    let (ok, _, err) = run(&[
        "plugin",
        "push",
        component.to_str().unwrap(),
        "cli/evict:v1",
    ]);
    assert!(!ok && err.contains("oci://"), "{err}");

    let (ok, out, err) = run(&["plugin", "pull", &tag, "--out", "pulled.wasm"]);
    assert!(ok, "{err}");
    assert!(out.contains(&digest), "{out}");
    assert_eq!(
        std::fs::read(dir.path().join("pulled.wasm")).unwrap(),
        std::fs::read(&component).unwrap()
    );

    // A key pair made with openssl, as the docs say; `sign` resolves the tag to its digest.
    p256_key_pair(dir.path(), "key");
    p256_key_pair(dir.path(), "other");
    let (ok, out, err) = run(&[
        "plugin", "pull", &tag, "--key", "key.pub", "--out", "x.wasm",
    ]);
    assert!(!ok && err.contains("unsigned"), "{out}{err}");
    let (ok, out, err) = run(&["plugin", "sign", &tag, "--key", "key.pem"]);
    assert!(ok, "{err}");
    assert!(out.contains(&digest), "{out}");
    let (ok, _, err) = run(&[
        "plugin", "pull", &tag, "--key", "key.pub", "--out", "x.wasm",
    ]);
    assert!(ok, "{err}");
    let (ok, _, err) = run(&[
        "plugin",
        "pull",
        &tag,
        "--key",
        "other.pub",
        "--out",
        "x.wasm",
    ]);
    assert!(
        !ok && err.contains("not signed by the configured key"),
        "{err}"
    );

    // The signature is stored as cosign stores one, and openssl verifies it: the manifest tagged
    // sha256-<hex>.sig, a simple-signing payload layer, the base64 DER signature annotation.
    let base = format!("http://{}/v2/cli/evict", server.address());
    let sig_tag = digest.replace(':', "-") + ".sig";
    let manifest: serde_json::Value = serde_json::from_str(
        &ureq::get(&format!("{base}/manifests/{sig_tag}"))
            .set("Accept", "application/vnd.oci.image.manifest.v1+json")
            .call()
            .unwrap()
            .into_string()
            .unwrap(),
    )
    .unwrap();
    let layer = &manifest["layers"][0];
    assert_eq!(
        layer["mediaType"],
        "application/vnd.dev.cosign.simplesigning.v1+json"
    );
    let payload = ureq::get(&format!(
        "{base}/blobs/{}",
        layer["digest"].as_str().unwrap()
    ))
    .call()
    .unwrap()
    .into_string()
    .unwrap();
    let payload_json: serde_json::Value = serde_json::from_str(&payload).unwrap();
    assert_eq!(
        payload_json["critical"]["image"]["docker-manifest-digest"],
        digest.as_str()
    );
    assert_eq!(
        payload_json["critical"]["identity"]["docker-reference"],
        format!("{}/cli/evict", server.address())
    );
    std::fs::write(dir.path().join("payload.json"), &payload).unwrap();
    let signature = layer["annotations"]["dev.cosignproject.cosign/signature"]
        .as_str()
        .unwrap();
    std::fs::write(dir.path().join("sig.b64"), signature).unwrap();
    openssl(
        dir.path(),
        &["base64", "-d", "-A", "-in", "sig.b64", "-out", "sig.der"],
    );
    let verified = openssl(
        dir.path(),
        &[
            "dgst",
            "-sha256",
            "-verify",
            "key.pub",
            "-signature",
            "sig.der",
            "payload.json",
        ],
    );
    assert!(verified.contains("Verified OK"), "{verified}");
}

/// This machine's non-loopback IPv4 address, which a registry must be reached on over HTTPS
/// unless `--insecure`; `None` (a skip) without one, which CI never allows.
fn non_loopback_ipv4() -> Option<std::net::IpAddr> {
    let found = oci_registry::non_loopback_ipv4();
    if found.is_none() {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "this machine has no non-loopback IPv4 address"
        );
        eprintln!("SKIPPED: this machine has no non-loopback IPv4 address");
    }
    found.map(std::net::IpAddr::V4)
}

/// `plugin push|pull|sign` against a registry serving HTTPS with a private CA: refused with
/// what to do until `--ca-file` names the CA, then through; on loopback (plain HTTP unless a CA
/// is given) and on another address of this machine (HTTPS by default).
#[test]
fn plugin_push_pull_and_sign_over_https_with_the_registry_ca() {
    let Some(ip) = non_loopback_ipv4() else {
        return;
    };
    let loopback = std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| outcome(wasmlet().args(args).current_dir(dir.path()));
    let component = components::EVICTION_BATCH_FIRST.path();
    let component = component.to_str().unwrap();
    p256_key_pair(dir.path(), "key");
    for host in [loopback, ip] {
        let Some(server) = oci_registry::TestRegistry::start_tls(host) else {
            return;
        };
        let tag = server.reference("tls/evict:v1");
        let ca = server.ca_file();
        let ca = ca.to_str().unwrap();

        // Without the CA: refused, naming the registry and the flag that fixes it.
        let (ok, _, err) = run(&["plugin", "push", component, &tag]);
        assert!(!ok, "pushed to {host} without its CA");
        assert!(
            err.contains(&server.address()) && err.contains("--ca-file"),
            "{host}: {err}"
        );
        let (ok, _, err) = run(&["plugin", "pull", &tag, "--out", "x.wasm"]);
        assert!(
            !ok && err.contains(&server.address()) && err.contains("--ca-file"),
            "{host}: {err}"
        );

        // With it: push, sign and pull over HTTPS.
        let (ok, out, err) = run(&["plugin", "push", component, &tag, "--ca-file", ca]);
        assert!(ok, "{host}: {err}");
        let digest = out
            .lines()
            .find_map(|l| l.trim().strip_prefix("digest: "))
            .unwrap_or_else(|| panic!("no digest in {out}"))
            .to_string();
        let (ok, out, err) = run(&["plugin", "sign", &tag, "--key", "key.pem", "--ca-file", ca]);
        assert!(ok && out.contains(&digest), "{host}: {out}{err}");
        let (ok, out, err) = run(&[
            "plugin",
            "pull",
            &tag,
            "--key",
            "key.pub",
            "--ca-file",
            ca,
            "--out",
            "pulled.wasm",
        ]);
        assert!(ok && out.contains(&digest), "{host}: {out}{err}");
        assert_eq!(
            std::fs::read(dir.path().join("pulled.wasm")).unwrap(),
            std::fs::read(component).unwrap()
        );
        std::fs::remove_file(dir.path().join("pulled.wasm")).unwrap();
    }

    // A CA file that cannot be used is named with the reason, before any request.
    let tag = "oci://127.0.0.1:9/tls/evict:v1";
    std::fs::write(dir.path().join("not-a-ca.pem"), "hello\n").unwrap();
    let (ok, _, err) = run(&["plugin", "pull", tag, "--ca-file", "not-a-ca.pem"]);
    assert!(
        !ok && err.contains("not-a-ca.pem") && err.contains("no certificate"),
        "{err}"
    );
    let (ok, _, err) = run(&["plugin", "pull", tag, "--ca-file", "missing.pem"]);
    assert!(
        !ok && err.contains("missing.pem") && err.contains("cannot read"),
        "{err}"
    );
    let (ok, _, err) = run(&["plugin", "pull", tag, "--ca-file", "key.pub", "--insecure"]);
    assert!(!ok && err.contains("cannot be used with"), "{err}");
}

/// A registry on another address of this machine is reached over HTTPS: one serving plain HTTP
/// is refused (naming `--insecure`) until `--insecure` says plain HTTP.
#[test]
fn plugin_push_and_pull_over_plain_http_only_when_insecure() {
    let Some(ip) = non_loopback_ipv4() else {
        return;
    };
    let Some(server) = oci_registry::TestRegistry::start_on(ip) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| outcome(wasmlet().args(args).current_dir(dir.path()));
    let component = components::EVICTION_BATCH_FIRST.path();
    let component = component.to_str().unwrap();
    let tag = server.reference("plain/evict:v1");
    let (ok, _, err) = run(&["plugin", "push", component, &tag]);
    assert!(
        !ok && err.contains(&server.address()) && err.contains("--insecure"),
        "{err}"
    );
    let (ok, _, err) = run(&["plugin", "push", component, &tag, "--insecure"]);
    assert!(ok, "{err}");
    let (ok, _, err) = run(&["plugin", "pull", &tag, "--out", "x.wasm"]);
    assert!(!ok && err.contains("--insecure"), "{err}");
    let (ok, _, err) = run(&["plugin", "pull", &tag, "--insecure", "--out", "x.wasm"]);
    assert!(ok, "{err}");
    assert_eq!(
        std::fs::read(dir.path().join("x.wasm")).unwrap(),
        std::fs::read(component).unwrap()
    );
}
