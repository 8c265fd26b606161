//! Runs the built `sramfit inspect` on the fixture models and checks the table, the JSON report, the
//! SVG timeline and the HTML page (rendered by headless Chromium when `/usr/bin/chromium` exists).
#![cfg(feature = "onnx")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use sramfit_planner_core::compile::compile_model;
use sramfit_planner_core::request::Request;

fn model(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/models").join(format!("{name}.onnx"))
}

fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sramfit-inspect-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn inspect(model: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sramfit")).arg("inspect").arg(model).args(extra).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn node_count(name: &str) -> usize {
    compile_model(&Request::new(model(name))).unwrap().program().graph.nodes.len()
}

/// Runs `inspect --json` and returns the parsed report.
fn json_report(name: &str, test: &str) -> Value {
    let path = temp_dir(test).join("plan.json");
    let out = inspect(&model(name), &["--json", path.to_str().unwrap()]);
    assert!(out.status.success(), "{name}: {}", stderr(&out));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The attributes of every `<TAG ...>` start tag in an XML/HTML text (a tiny scanner: enough for the
/// double-quoted attributes the CLI writes).
fn tags(text: &str, tag: &str) -> Vec<BTreeMap<String, String>> {
    let open = format!("<{tag} ");
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(&open) {
        let body = &rest[i + open.len()..];
        let end = body.find('>').expect("unterminated tag");
        let mut attrs = BTreeMap::new();
        let mut a = &body[..end];
        while let Some(eq) = a.find("=\"") {
            let key = a[..eq].trim().trim_end_matches('/').to_owned();
            let after = &a[eq + 2..];
            let close = after.find('"').expect("unterminated attribute");
            attrs.insert(key, after[..close].to_owned());
            a = &after[close + 1..];
        }
        found.push(attrs);
        rest = &body[end..];
    }
    found
}

fn num(attrs: &BTreeMap<String, String>, key: &str) -> f64 {
    attrs.get(key).unwrap_or_else(|| panic!("no {key} in {attrs:?}")).parse().unwrap()
}

/// The JSON report's arena buffers (roots and scratch): `name -> (offset, size, first, last)`.
fn arena_buffers(report: &Value) -> BTreeMap<String, (u64, u64, u64, u64)> {
    let mut m = BTreeMap::new();
    for t in report["tensors"].as_array().unwrap() {
        if t["buffer"].is_null() || !t["alias_of"].is_null() {
            continue;
        }
        let n = |k: &str| t[k].as_u64().unwrap_or_else(|| panic!("{k} of {t}"));
        let prev =
            m.insert(t["name"].as_str().unwrap().to_owned(), (n("offset"), n("size"), n("first_step"), n("last_step")));
        assert!(prev.is_none(), "buffer names are unique");
    }
    m
}

#[test]
fn prints_the_schedule_table_footer_and_device_map() {
    let out = inspect(&model("kws_dscnn"), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    print!("{text}");
    let header = text.lines().find(|l| l.trim_start().starts_with("step")).expect("table header");
    for col in ["op", "node", "output", "shape", "arena bytes", "live steps", "live bytes", "MACs"] {
        assert!(header.contains(col), "{col} in {header}");
    }
    let steps = node_count("kws_dscnn");
    // One row per step (rows start with the step index; scratch rows start with spaces and `+`).
    let rows = text.lines().filter(|l| l.split_whitespace().next().is_some_and(|w| w.parse::<usize>().is_ok())).count();
    assert_eq!(rows, steps, "{text}");
    let peak_rows = text.lines().filter(|l| {
        let mut w = l.split_whitespace();
        w.next().is_some_and(|s| s.parse::<usize>().is_ok()) && w.next() == Some("*")
    });
    assert_eq!(peak_rows.count(), 1, "exactly one step is marked as the peak");
    for key in ["arena", "lower bound", "naive", "weights", "planner", "optimal", "SRAM", "flash", "busy flag", "stack"]
    {
        assert!(text.contains(key), "`{key}` missing:\n{text}");
    }
    assert!(text.contains("unknown"), "code size is unknown: {text}");
}

#[test]
fn json_report_is_complete_and_consistent() {
    for name in ["kws_dscnn", "reshape_views", "two_inputs_two_outputs", "resnet8"] {
        let r = json_report(name, &format!("json-{name}"));
        for key in [
            "model",
            "arena_bytes",
            "lower_bound_bytes",
            "lower_bound_step",
            "naive_bytes",
            "weight_bytes",
            "algorithm",
            "optimal",
            "steps",
            "tensors",
            "device",
        ] {
            assert!(r.get(key).is_some(), "{name}: no `{key}`");
        }
        let arena = r["arena_bytes"].as_u64().unwrap();
        let lb = r["lower_bound_bytes"].as_u64().unwrap();
        assert!(arena >= lb, "{name}: arena {arena} < lower bound {lb}");
        assert!(r["naive_bytes"].as_u64().unwrap() >= arena);
        assert!(r["algorithm"].is_string() && r["optimal"].is_boolean());

        let steps = r["steps"].as_array().unwrap();
        assert_eq!(steps.len(), node_count(name), "{name}");
        for s in steps {
            for key in ["op", "node", "kernel", "output"] {
                assert!(s[key].is_string(), "{name}: step {key}: {s}");
            }
            assert!(s["macs"].is_u64() && s["live_bytes"].as_u64().unwrap() <= lb, "{name}: {s}");
        }
        assert!(r["lower_bound_step"].as_u64().unwrap() < steps.len() as u64);

        let tensors = r["tensors"].as_array().unwrap();
        let names: Vec<&str> = tensors.iter().map(|t| t["name"].as_str().unwrap()).collect();
        for t in tensors {
            let storage = t["storage"].as_str().unwrap();
            assert!(["arena", "input", "output", "flash", "scratch"].contains(&storage), "{t}");
            assert!(t["shape"].is_array() && t["size"].is_u64());
            let in_arena = storage == "arena" || storage == "scratch";
            for key in ["offset", "first_step", "last_step"] {
                assert_eq!(t[key].is_u64(), in_arena, "{name}: {key} of {t}");
            }
            if in_arena {
                let (off, size) = (t["offset"].as_u64().unwrap(), t["size"].as_u64().unwrap());
                assert!(off + size <= arena, "{name}: {t} outside the arena of {arena}");
                assert!(t["first_step"].as_u64() <= t["last_step"].as_u64());
                assert!(t["last_step"].as_u64().unwrap() < steps.len() as u64);
            }
            if let Some(root) = t["alias_of"].as_str() {
                assert!(names.contains(&root), "{name}: alias of unknown `{root}`");
                let root = tensors.iter().find(|x| x["name"] == root).unwrap();
                assert_eq!(root["storage"], t["storage"], "a view shares its root's storage");
                assert_eq!(root["offset"], t["offset"]);
            }
        }
        // Every step's output is a listed tensor.
        for s in steps {
            assert!(names.contains(&s["output"].as_str().unwrap()), "{s}");
        }

        let sram = r["device"]["sram"].as_array().unwrap();
        assert_eq!(sram[0]["name"], "arena");
        assert_eq!(sram[0]["bytes"].as_u64(), Some(arena));
        assert!(sram.iter().any(|e| e["name"] == "busy flag" && e["bytes"] == 1));
        assert!(sram.iter().any(|e| e["name"] == "stack" && e["estimate"] == true));
        let flash = r["device"]["flash"].as_array().unwrap();
        assert_eq!(flash[0]["bytes"], r["weight_bytes"]);
        assert!(flash.iter().any(|e| e["name"] == "code" && e["bytes"].is_null()));
    }
    let kws = json_report("kws_dscnn", "json-kws-macs");
    let macs: u64 = kws["steps"].as_array().unwrap().iter().map(|s| s["macs"].as_u64().unwrap()).sum();
    assert!(macs > 1_000_000, "{macs}");
}

#[test]
fn svg_has_one_rect_per_arena_buffer_at_its_planned_place() {
    let dir = temp_dir("svg");
    let (json, svg) = (dir.join("plan.json"), dir.join("plan.svg"));
    let out = inspect(
        &model("kws_dscnn"),
        &["--sram", "1MiB", "--json", json.to_str().unwrap(), "--svg", svg.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("fits"), "{}", stdout(&out));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(text.trim_end().ends_with("</svg>"));
    assert_eq!(text.matches("<rect ").count(), text.matches("</rect>").count());

    let root = &tags(&text, "svg")[0];
    let (left, top) = (num(root, "data-plot-left"), num(root, "data-plot-top"));
    let (step_px, px_per_byte, y_max) =
        (num(root, "data-step-px"), num(root, "data-px-per-byte"), num(root, "data-y-max"));
    assert_eq!(num(root, "data-arena") as u64, report["arena_bytes"].as_u64().unwrap());

    let buffers = arena_buffers(&report);
    let rects: Vec<_> = tags(&text, "rect").into_iter().filter(|r| r.contains_key("data-name")).collect();
    assert_eq!(rects.len(), buffers.len());
    assert!(!rects.is_empty());
    let close = |a: f64, b: f64| (a - b).abs() < 0.01;
    for r in &rects {
        let (off, size, first, last) = buffers[&r["data-name"]];
        assert_eq!((num(r, "data-offset") as u64, num(r, "data-size") as u64), (off, size));
        assert_eq!((num(r, "data-first") as u64, num(r, "data-last") as u64), (first, last));
        assert!(close(num(r, "x"), left + first as f64 * step_px), "{r:?}");
        assert!(close(num(r, "width"), (last - first + 1) as f64 * step_px), "{r:?}");
        assert!(close(num(r, "y"), top + (y_max - (off + size) as f64) * px_per_byte), "{r:?}");
        assert!(close(num(r, "height"), size as f64 * px_per_byte), "{r:?}");
    }
    let peak = tags(&text, "g").into_iter().find(|g| g.get("class").is_some_and(|c| c == "peak")).expect("peak marker");
    assert_eq!(peak["data-step"], report["lower_bound_step"].to_string());
    // A 1 MiB budget is far above this arena: stated, not drawn.
    assert!(text.contains("class=\"budget\" data-bytes=\"1048576\""));
}

#[test]
fn svg_draws_a_budget_line_inside_the_chart() {
    let dir = temp_dir("svg-budget");
    let svg = dir.join("plan.svg");
    let r = json_report("kws_dscnn", "svg-budget-json");
    let budget = r["arena_bytes"].as_u64().unwrap() * 3 / 2;
    let out = inspect(&model("kws_dscnn"), &["--sram", &budget.to_string(), "--svg", svg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&svg).unwrap();
    let root = &tags(&text, "svg")[0];
    assert_eq!(num(root, "data-y-max") as u64, budget);
    assert!(text.contains(&format!("<g class=\"budget\" data-bytes=\"{budget}\"><path")), "budget line drawn");
}

#[test]
fn html_is_self_contained_and_renders() {
    let dir = temp_dir("html");
    let (json, html) = (dir.join("plan.json"), dir.join("plan.html"));
    let out = inspect(&model("kws_dscnn"), &["--json", json.to_str().unwrap(), "--html", html.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let buffers = arena_buffers(&report).len();
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(text.starts_with("<!DOCTYPE html>"));
    assert!(text.contains("<svg ") && text.contains("<script>") && text.contains("<style>"));
    assert_eq!(tags(&text, "rect").iter().filter(|r| r.contains_key("data-name")).count(), buffers);
    for external in ["src=", "href=", "@import", "url("] {
        assert!(!text.contains(external), "external resource `{external}` in the page");
    }
    assert_eq!(
        text.matches("http").count(),
        text.matches("http://www.w3.org/2000/svg").count(),
        "only the SVG namespace"
    );

    let chromium = Path::new("/usr/bin/chromium");
    if !chromium.exists() {
        println!("skipped: /usr/bin/chromium is absent, the page was not rendered");
        return;
    }
    let profile = dir.join("chromium-profile");
    let dom = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", html.display()))
        .output()
        .unwrap();
    assert!(dom.status.success(), "chromium: {}", String::from_utf8_lossy(&dom.stderr));
    let dom = String::from_utf8(dom.stdout).unwrap();
    let rects = tags(&dom, "rect").into_iter().filter(|r| r.contains_key("data-name")).count();
    assert_eq!(rects, buffers, "rects in the rendered DOM");
    // The inline script ran: it counts the rects it attached tooltips to.
    assert!(
        dom.contains(&format!("data-buffers=\"{buffers}\"")),
        "script did not run:\n{}",
        &dom[..dom.len().min(2000)]
    );
}

#[test]
fn too_small_a_budget_exits_1_with_the_report() {
    let out = inspect(&model("kws_dscnn"), &["--sram", "1000"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    for part in ["needs an arena of", "budget is 1000 bytes", "bytes over", "lower bound", "= help: raise `--sram`"] {
        assert!(err.contains(part), "`{part}` not in {err}");
    }
    assert!(stdout(&out).contains("DOES NOT FIT"), "{}", stdout(&out));
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = temp_dir("bad");
    let garbage = dir.join("garbage.onnx");
    std::fs::write(&garbage, b"this is not a protobuf \xff\xff\xff").unwrap();
    let cases: Vec<(PathBuf, Vec<&str>, &str)> = vec![
        (dir.join("missing.onnx"), vec![], "not found"),
        (garbage, vec![], "not a valid ONNX model"),
        (model("kws_dscnn"), vec!["--sram", "lots"], "--sram"),
        (model("kws_dscnn"), vec!["--input", "x"], "--input"),
        (model("kws_dscnn"), vec!["--frobnicate"], "unknown option"),
        (model("kws_dscnn"), vec!["--input", "nope=1,2"], "not an input of the model"),
    ];
    for (path, extra, expected) in cases {
        let out = inspect(&path, &extra);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{path:?} {extra:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        assert!(err.contains(expected), "`{expected}` not in {err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn no_rewrites_plans_the_graph_as_imported() {
    let with = inspect(&model("lenet"), &["--tile"]);
    let without = inspect(&model("lenet"), &["--no-rewrites"]);
    assert!(with.status.success() && without.status.success());
    let (with, without) = (stdout(&with), stdout(&without));
    assert!(with.contains("4 activation(s) fused into the preceding kernel"), "{with}");
    assert!(with.contains("3 scale/shift step(s) folded into convolution weights"), "{with}");
    assert!(
        without.contains(
            "activation fusion off, in-place execution off, concat elision off, input/output overlap off, transpose folding off, subsampling folding off, scratch fitting off, scheduling off, tiling off, row caching off"
        ),
        "{without}"
    );
    let arena =
        |s: &str| s.lines().find(|l| l.starts_with("arena")).unwrap().split_whitespace().nth(1).unwrap().to_owned();
    // Without scratch fitting, conv2's im2col scratch is its preferred size: 128 rows (the kernel's
    // K block) x 64 positions. With the rewrites and tiling asked for (on an x86-64 or AArch64
    // host it is not the default), patch-based execution runs the convolutions in bands of rows,
    // copying the rows neighbouring bands share (23,520 B untiled; 7,920 B recomputing them).
    assert_eq!((arena(&with).as_str(), arena(&without).as_str()), ("6,336", "43,872"));
}

/// The `rewrites` line of the footer.
fn rewrites_line(text: &str) -> String {
    text.lines().find(|l| l.starts_with("rewrites")).unwrap_or_else(|| panic!("no rewrites line: {text}")).to_owned()
}

#[test]
fn one_flag_per_rewrite() {
    let out = inspect(&model("lenet"), &["--no-fuse-activations"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let line = rewrites_line(&stdout(&out));
    assert!(line.contains("activation fusion off") && line.contains("step(s) in place"), "{line}");
    assert!(!line.contains("scheduling off"), "{line}");
    // Fusion alone: the two ReLUs after convolutions, and the two after a matrix product's bias
    // Add (with scale/shift folding off, the bias stays an Add).
    let out = inspect(&model("lenet"), &["--no-rewrites", "--fuse-activations"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let line = rewrites_line(&stdout(&out));
    assert!(line.contains("4 activation(s) fused") && line.contains("in-place execution off"), "{line}");
    assert!(line.contains("scheduling off") && line.contains("weight packing off"), "{line}");
}

#[test]
fn bounded_dimension_with_rewrite_switches() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/models/dynamic/conv1d_gap.onnx");
    let out = inspect(&path, &["--input", "input=1,40,frames<=98", "--no-in-place", "--io-arena"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("bounded dimension `frames`: 1..=98, planned at 98"), "{text}");
    assert!(rewrites_line(&text).contains("in-place execution off"), "{text}");
    // The table is the plan at the largest length: the input is [1, 40, 98], in the arena.
    let input_row = text.lines().find(|l| l.contains("[1,40,98]"));
    assert!(input_row.is_some() || text.contains("[1,16,98]"), "{text}");
    let bad = inspect(&path, &["--input", "input=1,40,frames<=0"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("malformed bounded dimension"), "{}", stderr(&bad));
}

#[test]
fn timings_show_every_phase() {
    let out = inspect(&model("kws_dscnn"), &["--timings"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let table = text.split("timings (").nth(1).unwrap_or_else(|| panic!("no timings: {text}"));
    for phase in ["load", "declutter", "fold", "lower", "rewrites", "liveness", "plan", "verify", "codegen", "total"] {
        let row = table.lines().find(|l| l.split_whitespace().next() == Some(phase));
        let row = row.unwrap_or_else(|| panic!("no `{phase}` row: {table}"));
        let seconds: f64 = row.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert!(seconds >= 0.0, "{row}");
        if phase != "total" {
            assert!(row.contains(" B ("), "a peak heap figure: {row}");
        }
    }
}

#[test]
fn limits_stop_hostile_models_and_are_raisable() {
    let hostile = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui-tests/models/limits/constant_of_shape.onnx");
    let out = inspect(&hostile, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains("node `c` (ConstantOfShape)") && err.contains("the `fold_tensor_bytes` limit"), "{err}");
    assert!(err.contains("--limit fold_tensor_bytes=16GiB"), "{err}");
    let out = inspect(&model("lenet"), &["--limit", "nodes=3"]);
    assert!(
        stderr(&out).contains("the `nodes` limit of 3") && stderr(&out).contains("--limit nodes="),
        "{}",
        stderr(&out)
    );
    assert!(inspect(&model("lenet"), &["--limit", "nodes=1000", "--target", "thumbv7em-none-eabihf"]).status.success());
}
