use super::*;

/// A project directory named like a plugin (a temporary directory's own name is not a DNS
/// label).
struct TestProject {
    _tmp: tempfile::TempDir,
    path: PathBuf,
}

impl TestProject {
    fn path(&self) -> &Path {
        &self.path
    }
}

fn project_with(files: &[(&str, &str)]) -> TestProject {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("my-plugin");
    std::fs::create_dir(&path).unwrap();
    for (name, text) in files {
        std::fs::write(path.join(name), text).unwrap();
    }
    TestProject { _tmp: tmp, path }
}

fn message(error: ProjectError) -> String {
    error.to_string()
}

#[test]
fn language_and_world_come_from_the_files() {
    let go = project_with(&[
        ("go.mod", "module x\n"),
        (
            "main.go",
            "import (\n\t\"wasmlet.dev/plugin\"\n\t\"wasmlet.dev/plugin/probe\"\n)\n",
        ),
    ]);
    let project = Project::open(go.path(), None, None).unwrap();
    assert_eq!(
        (project.lang, project.world),
        (Lang::Go, Some(World::ProbeHandler))
    );

    let py = project_with(&[(
        "app.py",
        "from wasmlet_plugin import parse_config\nfrom wasmlet_plugin.hooks import LifecycleHooks, world\n",
    )]);
    let project = Project::open(py.path(), None, None).unwrap();
    assert_eq!(
        (project.lang, project.world),
        (Lang::Python, Some(World::LifecycleHooks))
    );

    for import in ["'wasmlet-plugin-sdk/eviction'", "'../../src/eviction.js'"] {
        let js = project_with(&[(
            "component.js",
            &format!("import * as host from 'wasmlet:plugin/host@0.1.2';\nimport {{ evictionWorld }} from {import};\n"),
        )]);
        let project = Project::open(js.path(), None, None).unwrap();
        assert_eq!(
            (project.lang, project.world),
            (Lang::Js, Some(World::EvictionPolicy))
        );
    }

    // A Rust crate's world is known only once built.
    let rust = project_with(&[("Cargo.toml", "[package]\n")]);
    assert_eq!(Project::open(rust.path(), None, None).unwrap().world, None);
}

#[test]
fn the_pressure_module_builds_the_pressure_eviction_world() {
    let cases = [
        (
            Lang::Go,
            "main.go",
            "import (\n\t\"wasmlet.dev/plugin\"\n\t\"wasmlet.dev/plugin/pressure\"\n)\n",
            "pressure-eviction-policy",
        ),
        (
            Lang::Go,
            "main.go",
            "import \"wasmlet.dev/plugin/eviction\"\n",
            "eviction-policy",
        ),
        (
            Lang::Js,
            "component.js",
            "import { pressureEvictionWorld } from '../../src/pressure.js';\n",
            "pressure-eviction-policy",
        ),
        (
            Lang::Js,
            "component.js",
            "import { evictionWorld } from 'wasmlet-plugin-sdk/eviction';\n",
            "eviction-policy",
        ),
    ];
    for (lang, file, text, wit_world) in cases {
        let dir = project_with(&[(file, text)]);
        let project = Project::open(dir.path(), None, None).unwrap();
        assert_eq!(project.world, Some(World::EvictionPolicy), "{text}");
        assert_eq!(
            super::wit_world(dir.path(), lang, World::EvictionPolicy),
            wit_world,
            "{text}"
        );
    }
}

#[test]
fn the_manifest_wins_and_flags_must_agree() {
    let dir = project_with(&[
        (
            MANIFEST,
            "name: my-probe\nworld: probe-handler\nlang: python\nsdk: ../sdk-python\n",
        ),
        ("app.py", "from wasmlet_plugin.eviction import world\n"),
    ]);
    let project = Project::open(dir.path(), None, None).unwrap();
    assert_eq!(project.name, "my-probe");
    assert_eq!(project.world, Some(World::ProbeHandler));
    assert_eq!(project.sdk, Some(dir.path().join("../sdk-python")));

    let err = message(Project::open(dir.path(), Some(Lang::Go), None).unwrap_err());
    assert!(err.contains("--lang go but the project is python"), "{err}");
    let err = message(Project::open(dir.path(), None, Some(World::GcStrategy)).unwrap_err());
    assert!(
        err.contains("--world gc-strategy but the project is probe-handler"),
        "{err}"
    );
}

#[test]
fn what_cannot_be_told_is_named() {
    let empty = project_with(&[]);
    let err = message(Project::open(empty.path(), None, None).unwrap_err());
    assert!(err.contains("which language"), "{err}");

    let no_world = project_with(&[("app.py", "import json\n")]);
    let err = message(Project::open(no_world.path(), None, None).unwrap_err());
    assert!(err.contains("cannot tell the world"), "{err}");
    assert!(Project::open(no_world.path(), None, Some(World::ProbeHandler)).is_ok());

    let bad = project_with(&[(MANIFEST, "name: x\nworld: eviction-policy\nlang: cobol\n")]);
    let err = message(Project::open(bad.path(), None, None).unwrap_err());
    assert!(
        err.contains(MANIFEST) && err.contains("field `lang`"),
        "{err}"
    );

    let bad_name = project_with(&[(
        MANIFEST,
        "name: Not_A_Label\nworld: eviction-policy\nlang: go\n",
    )]);
    let err = message(Project::open(bad_name.path(), None, None).unwrap_err());
    assert!(err.contains("not a lowercase DNS label"), "{err}");

    let missing = empty.path().join("nowhere");
    let err = message(Project::open(&missing, None, None).unwrap_err());
    assert!(err.contains("not a directory"), "{err}");
}

#[test]
fn every_template_is_filled_and_opens_as_its_project() {
    let sdk = std::path::Path::new("/opt/wasmlet/plugins/sdk-x");
    for lang in Lang::ALL {
        assert_eq!(
            lang.worlds(),
            &World::ALL,
            "{} has every world",
            lang.as_str()
        );
        for &world in lang.worlds() {
            let files =
                scaffold::project_files("my-plugin", world, lang, &sdk.display().to_string(), sdk);
            let dir = project_with(&[]);
            for (name, text) in &files {
                for placeholder in ["@NAME@", "@TYPE@", "@WORLD@", "@SDK@"] {
                    assert!(
                        !text.contains(placeholder),
                        "{} {} {name}: {placeholder} is left",
                        lang.as_str(),
                        world.as_str()
                    );
                }
                let path = dir.path().join(name);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, text).unwrap();
            }
            let project = Project::open(dir.path(), None, None).unwrap();
            assert_eq!(project.lang, lang);
            assert_eq!(project.world, Some(world));
            assert_eq!(project.name, "my-plugin");
            assert_eq!(project.sdk.as_deref(), Some(sdk));
        }
    }
}

/// The checkout this crate is built from.
fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn each_sdk_ships_the_contract_and_the_version_wasmlet_names() {
    let root = checkout();
    let mut contract: Vec<_> = std::fs::read_dir(root.join("wit"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "wit"))
        .collect();
    contract.sort();
    assert!(contract.len() > 5, "{contract:?}");
    for copy in [
        "plugins/sdk-go/wit",
        "plugins/sdk-js/wit",
        "plugins/sdk-python/wasmlet_plugin/wit",
    ] {
        let copied = std::fs::read_dir(root.join(copy)).unwrap().count();
        assert_eq!(
            copied,
            contract.len(),
            "{copy} has other files than wit/*.wit: run scripts/sync-sdk-wit.sh"
        );
        for file in &contract {
            let name = file.file_name().unwrap();
            assert!(
                std::fs::read(root.join(copy).join(name)).ok() == std::fs::read(file).ok(),
                "{copy}/{} differs from wit/: run scripts/sync-sdk-wit.sh",
                name.to_string_lossy()
            );
        }
    }
    let pyproject =
        std::fs::read_to_string(root.join("plugins/sdk-python/pyproject.toml")).unwrap();
    assert!(
        pyproject.contains(&format!("\nversion = \"{SDK_VERSION}\"\n")),
        "pyproject.toml's version is not SDK_VERSION {SDK_VERSION}"
    );
    let package: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("plugins/sdk-js/package.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(package["version"], SDK_VERSION);
    // npm pack ships what a project outside the checkout needs.
    let files = package["files"].as_array().unwrap();
    for needed in ["src/", "wit/", "build.mjs"] {
        assert!(files.iter().any(|f| f == needed), "{needed} is not packed");
    }
}

#[test]
fn a_missing_sdk_names_the_one_to_pass() {
    let nowhere = Path::new("/nowhere");
    let cases = [
        (Lang::Python, "needs the Python SDK: pass --sdk PATH to wasmlet_plugin-0.1.0-py3-none-any.whl (build it with `pip wheel plugins/sdk-python`"),
        (Lang::Js, "needs the JavaScript SDK: pass --sdk PATH to wasmlet-plugin-sdk-0.1.0.tgz (build it with `npm pack ./plugins/sdk-js`"),
        (Lang::Go, "needs the Go SDK: pass --sdk PATH to the Go module directory of wasmlet.dev/plugin"),
        (Lang::Rust, "needs the Rust SDK: pass --sdk PATH to the crate directory of wasmlet-plugin-sdk"),
    ];
    for (lang, expected) in cases {
        let error = SdkError::Missing {
            command: "new",
            lang,
            start: nowhere.into(),
        }
        .to_string();
        assert!(
            error.starts_with(&format!("wasmlet plugin new --lang {} ", lang.as_str()))
                && error.contains(expected),
            "{error}"
        );
    }
}

#[test]
fn sdk_packages_and_directories_are_told_apart() {
    let root = checkout();
    let tmp = tempfile::tempdir().unwrap();
    let wheel = tmp.path().join("wasmlet_plugin-0.1.0-py3-none-any.whl");
    let tarball = tmp.path().join("wasmlet-plugin-sdk-0.1.0.tgz");
    let other = tmp.path().join("sdk.zip");
    for file in [&wheel, &tarball, &other] {
        std::fs::write(file, b"").unwrap();
    }
    use install::SdkSource;
    assert!(matches!(
        SdkSource::of(Lang::Python, &wheel),
        Ok(SdkSource::Wheel(_))
    ));
    assert!(matches!(
        SdkSource::of(Lang::Js, &tarball),
        Ok(SdkSource::Tarball(_))
    ));
    let refused = |lang, path: &Path| SdkSource::of(lang, path).unwrap_err().to_string();
    assert!(refused(Lang::Js, &wheel).contains("the Python SDK's package"));
    assert!(refused(Lang::Go, &tarball).contains("the JavaScript SDK's package"));
    assert!(refused(Lang::Python, &other).contains("neither an SDK directory nor an SDK package"));
    assert!(refused(Lang::Python, &tmp.path().join("gone.whl")).contains("no such file"));

    // A checkout's SDK directories, each with its contract; another language's is refused.
    for lang in [Lang::Go, Lang::Python, Lang::Js] {
        let dir = root.join("plugins").join(lang.sdk_dir_name());
        let Ok(SdkSource::Dir(found)) = SdkSource::of(lang, &dir) else {
            panic!("{} is not the {} SDK", dir.display(), lang.as_str());
        };
        let tree = sdk::SdkTree::find(lang, Some(&found), &found, "build").unwrap();
        assert!(tree.wit().join("worlds.wit").is_file());
    }
    let error = refused(Lang::Go, &root.join("plugins/sdk-js"));
    assert!(error.contains("no go.mod there"), "{error}");

    // An SDK without its contract is named as such.
    let bare = tmp.path().join("sdk-go");
    std::fs::create_dir(&bare).unwrap();
    std::fs::write(bare.join("go.mod"), "module wasmlet.dev/plugin\n").unwrap();
    let error = refused(Lang::Go, &bare);
    assert!(error.contains("no wit/worlds.wit there"), "{error}");
}
