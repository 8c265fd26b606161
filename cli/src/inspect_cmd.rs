//! `sramfit inspect MODEL.onnx [--sram BYTES] [--input NAME=1,49,10,1]... [--json PLAN.json]
//! [--svg PLAN.svg] [--html PLAN.html] [--timings] [request flags]`: compiles a model the way
//! `model!` does and shows its plan.
//!
//! Prints the schedule (one row per step: op, node, output tensor and shape, where its bytes are,
//! its buffer's lifetime, the arena bytes live at that step, the step's MACs), a footer with the
//! arena, lower bound, naive arena, weights and planner, and the device map (what occupies SRAM and
//! flash). `--sram` checks the arena against a budget as `model!` does: over budget prints the
//! compile error's report and exits 1. `--json` writes the [`PlanReport`]; `--svg` draws the memory
//! timeline (x = step, y = arena offset, one `<rect>` per arena buffer); `--html` writes a
//! self-contained page with that drawing, hover tooltips and the tables. `--timings` prints the
//! time and peak heap of each phase of the compilation (code generation included). Every option
//! of `model!` has its flag ([`crate::request_args`]); a bounded dimension shows the plan at its
//! largest length.
//!
//! Bad input (missing file, not ONNX, unsupported operator, bad option) is one line on stderr and
//! exit code 2.

use std::fmt::Write as _;

use sramfit_planner_core::codegen::CodegenOptions;
use sramfit_planner_core::compile::{compile_model, Compiled};
use sramfit_planner_core::error::FrontEnd;
use sramfit_planner_core::pipeline::Program;
use sramfit_planner_core::report::{PlanReport, StorageKind, TensorReport};
use sramfit_planner_core::request::Request;
use sramfit_planner_core::timings::{self, Timings};
use sramfit_planner_core::units::human;

use crate::request_args::{self, one_line};
use crate::CliError;

/// Usage line of the subcommand.
pub fn usage() -> String {
    format!(
        "usage: sramfit inspect MODEL.onnx [--json PLAN.json] [--svg PLAN.svg] [--html PLAN.html] [--timings] [flags]\n{}",
        request_args::usage()
    )
}

/// Parsed arguments of `inspect`.
#[derive(Debug)]
struct Args {
    /// What to compile (its `sram` is checked after the report is printed).
    request: Request,
    json: Option<String>,
    svg: Option<String>,
    html: Option<String>,
    /// Print each phase's time and peak heap.
    timings: bool,
}

fn parse(args: Vec<String>) -> Result<Args, CliError> {
    let mut request = Request::new("");
    request.use_plan_file = true;
    let (mut json, mut svg, mut html, mut timings, mut model) = (None, None, None, false, None);
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().ok_or_else(|| CliError::usage(format!("{flag} needs a value")));
        if request_args::apply(&mut request, &arg, &mut value)? {
            continue;
        }
        match arg.as_str() {
            "--json" => json = Some(value("--json")?),
            "--svg" => svg = Some(value("--svg")?),
            "--html" => html = Some(value("--html")?),
            "--timings" => timings = true,
            "-h" | "--help" => return Err(CliError::usage(usage())),
            flag if flag.starts_with("--") => {
                return Err(CliError::usage(format!("inspect: unknown option `{flag}`")));
            }
            _ if model.is_none() => model = Some(arg),
            _ => return Err(CliError::usage(format!("inspect: unexpected argument `{arg}`"))),
        }
    }
    let model = model.ok_or_else(|| CliError::usage(usage()))?;
    (request.path, request.shown_path) = (model.clone().into(), model.into());
    Ok(Args { request, json, svg, html, timings })
}

fn write_file(path: &str, contents: &str) -> Result<(), CliError> {
    std::fs::write(path, contents).map_err(|e| CliError::failure(format!("{path}: {e}")))
}

/// Compiles the request (its budgets are checked by the caller, after the report) and, with
/// `timings`, generates the code too, recording each phase.
fn compile(request: &Request, timings: bool) -> (Result<Compiled, CliError>, Timings) {
    let unbudgeted = Request { sram: None, flash: None, ..request.clone() };
    // The driver catches panics of the ONNX loader; the hook would still print them.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let probe: &'static dyn timings::MemoryProbe = &crate::heap::HEAP;
    let (compiled, recorded) = timings::record(timings.then_some(probe), || {
        let compiled = compile_model(&unbudgeted);
        if let (true, Ok(c)) = (timings, &compiled) {
            c.emit(&CodegenOptions::default());
        }
        compiled
    });
    std::panic::set_hook(hook);
    (compiled.map_err(|e| CliError::usage(one_line(&e))), recorded)
}

/// Runs the subcommand.
pub fn run(args: Vec<String>) -> Result<(), CliError> {
    let args = parse(args)?;
    let start = std::time::Instant::now();
    let (compiled, recorded) = compile(&args.request, args.timings);
    let seconds = start.elapsed().as_secs_f64();
    let compiled = compiled?;
    let program = compiled.program();
    let model = &args.request.shown_path;
    let name = model.file_stem().map_or_else(|| model.display().to_string(), |s| s.to_string_lossy().into());
    let report = PlanReport::from_program(program, &name, &args.request.target);
    let sram = args.request.sram;

    print!("{}", table(program, &report, sram));
    if let Compiled::Bounded(d) = &compiled {
        let b = &d.bound;
        println!(
            "bounded dimension `{}`: {}..={}, planned at {} ({} class(es) of lengths; the table shows the largest length)",
            b.symbol,
            b.min,
            b.max,
            b.max,
            d.classes.len()
        );
    }
    if args.timings {
        print!("{}", timings_table(&recorded, seconds));
    }
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&report).map_err(|e| CliError::failure(e.to_string()))?;
        write_file(path, &(json + "\n"))?;
    }
    if let Some(path) = &args.svg {
        write_file(path, &svg(&report, sram))?;
    }
    if let Some(path) = &args.html {
        write_file(path, &html(program, &report, sram))?;
    }
    sramfit_planner_core::budget::check(program, sram, args.request.flash)
        .map_err(|e| CliError::failure(e.render(FrontEnd::Cli)))
}

/// Each phase's time, runs and peak heap, then the total.
fn timings_table(t: &Timings, total: f64) -> String {
    let mut rows = vec![["phase", "seconds", "runs", "peak heap"].map(String::from).to_vec()];
    for p in &t.phases {
        let peak = p.peak_bytes.map_or("-".into(), |b| format!("{} B ({})", grouped(b), human(b)));
        rows.push(vec![p.name.to_string(), format!("{:.3}", p.seconds), p.runs.to_string(), peak]);
    }
    let timed: f64 = t.phases.iter().map(|p| p.seconds).sum();
    rows.push(vec!["other".into(), format!("{:.3}", (total - timed).max(0.0)), String::new(), String::new()]);
    rows.push(vec!["total".into(), format!("{total:.3}"), String::new(), String::new()]);
    format!(
        "\ntimings (wall clock; peak heap: the most bytes allocated at once during the phase):\n{}",
        columns(&rows, &[false, true, true, true])
    )
}

// ---------------------------------------------------------------------------------------------
// Table

/// `[1, 49, 10, 1]` without spaces: `[1,49,10,1]`.
fn shape(s: &[usize]) -> String {
    let dims: Vec<String> = s.iter().map(usize::to_string).collect();
    format!("[{}]", dims.join(","))
}

/// Where a tensor's bytes are, for the table: `0..2560` (with pools `sram 0..2560`), `input`,
/// `output`, `flash`.
fn place(t: &TensorReport) -> String {
    let pool = t.pool.as_ref().map_or(String::new(), |p| format!("{p} "));
    let at = match (t.storage, t.offset) {
        (StorageKind::Arena | StorageKind::Scratch, Some(o)) => format!("{pool}{o}..{}", o + t.size),
        (StorageKind::Input, _) => "input".into(),
        (StorageKind::Output, _) => "output".into(),
        (StorageKind::Flash, _) => "flash".into(),
        _ => "?".into(),
    };
    match &t.alias_of {
        Some(root) => format!("{at} (view of {root})"),
        None => at,
    }
}

fn lifetime(t: &TensorReport) -> String {
    match (t.first_step, t.last_step) {
        (Some(a), Some(b)) => format!("{a}..={b}"),
        _ => "-".into(),
    }
}

/// Thousands separators: `1,234,567`.
fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The scratch entry of step `i`, if it has one.
fn scratch_of<'a>(p: &Program, r: &'a PlanReport, i: usize) -> Option<&'a TensorReport> {
    let b = p.live.scratch[i]?;
    r.tensors.iter().find(|t| t.storage == StorageKind::Scratch && t.buffer == Some(b))
}

/// Renders rows as left- (`<`) or right- (`>`) aligned columns separated by two spaces.
fn columns(rows: &[Vec<String>], right: &[bool]) -> String {
    let widths: Vec<usize> =
        (0..rows[0].len()).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut s = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let pad = widths[c] - cell.chars().count();
            if c > 0 {
                line.push_str("  ");
            }
            if right[c] {
                line.extend(std::iter::repeat_n(' ', pad));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s
}

/// The whole text report: schedule, footer, device map, budget verdict.
fn table(p: &Program, r: &PlanReport, sram: Option<u64>) -> String {
    let mut s = format!("{}: {} steps, {} tensors\n\n", r.model, r.steps.len(), p.graph.tensors.len());
    let mut rows = vec![["step", "op", "node", "output", "shape", "arena bytes", "live steps", "live bytes", "MACs"]
        .map(String::from)
        .to_vec()];
    for (i, (step, node)) in r.steps.iter().zip(&p.graph.nodes).enumerate() {
        let out = &r.tensors[node.output];
        let mark = if i as u32 == r.lower_bound_step { " *" } else { "" };
        rows.push(vec![
            format!("{i}{mark}"),
            step.op.clone(),
            step.node.clone(),
            out.name.clone(),
            shape(&out.shape),
            place(out),
            lifetime(out),
            grouped(step.live_bytes),
            grouped(step.macs),
        ]);
        if let Some(sc) = scratch_of(p, r, i) {
            let empty = String::new;
            rows.push(vec![
                empty(),
                empty(),
                empty(),
                "+ scratch".into(),
                shape(&sc.shape),
                place(sc),
                lifetime(sc),
                empty(),
                empty(),
            ]);
        }
    }
    s += &columns(&rows, &[true, false, false, false, false, false, false, true, true]);
    let _ = writeln!(s, "(* peak: the step where the lower bound is reached; live bytes exclude alignment padding)\n");

    let total_macs: u64 = r.steps.iter().map(|st| st.macs).sum();
    let peak_node = r.steps.get(r.lower_bound_step as usize).map_or(String::new(), |st| format!(" (`{}`)", st.node));
    let bytes = |b: u64| format!("{} B ({})", grouped(b), human(b));
    let mut footer = vec![
        vec!["arena".into(), bytes(r.arena_bytes)],
        vec![
            "lower bound".into(),
            format!("{}, peak at step {}{peak_node}", bytes(r.lower_bound_bytes), r.lower_bound_step),
        ],
        vec!["naive".into(), format!("{}, no reuse", bytes(r.naive_bytes))],
        vec!["weights".into(), format!("{} in flash", bytes(r.weight_bytes))],
        vec![
            "planner".into(),
            if r.plan_source.is_empty() {
                r.algorithm.name().into()
            } else {
                format!("{} ({})", r.algorithm.name(), r.plan_source)
            },
        ],
        vec![
            "optimal".into(),
            if r.optimal { "yes (no smaller arena exists for this schedule)".into() } else { "not proven".into() },
        ],
        vec!["rewrites".into(), r.optimizations.summary(&r.rewrites_enabled)],
        vec!["MACs".into(), grouped(total_macs)],
    ];
    if let Some(budget) = sram {
        let verdict = if r.arena_bytes <= budget {
            format!("{}: fits, {} B to spare", bytes(budget), grouped(budget - r.arena_bytes))
        } else {
            format!("{}: DOES NOT FIT, {} B over", bytes(budget), grouped(r.arena_bytes - budget))
        };
        footer.push(vec!["sram budget".into(), verdict]);
    }
    s += &columns(&footer, &[false, false]);

    let device_rows = |entries: &[sramfit_planner_core::report::DeviceEntry]| {
        let rows: Vec<Vec<String>> = entries
            .iter()
            .map(|e| {
                let b = match e.bytes {
                    Some(b) if e.estimate => format!("~{} B", grouped(b)),
                    Some(b) => format!("{} B", grouped(b)),
                    None => "unknown".into(),
                };
                vec![format!("  {}", e.name), b, e.note.clone()]
            })
            .collect();
        columns(&rows, &[false, true, false])
    };
    let _ = writeln!(s, "\nSRAM (the `sram` budget covers the arena only):");
    s += &device_rows(&r.device.sram);
    let _ = writeln!(
        s,
        "  total ~{} B ({}), stack estimated",
        grouped(r.device.sram_total_bytes),
        human(r.device.sram_total_bytes)
    );
    let _ = writeln!(s, "flash:");
    s += &device_rows(&r.device.flash);
    s
}

// ---------------------------------------------------------------------------------------------
// SVG

/// Escapes text for XML and HTML content and attribute values.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Geometry of the timeline: `x = left + step * step_px`, `y = top + (y_max - byte) * px_per_byte`
/// (offset 0 at the bottom). Written on the `<svg>` element as `data-*` attributes.
struct Frame {
    left: f64,
    top: f64,
    plot_w: f64,
    plot_h: f64,
    step_px: f64,
    px_per_byte: f64,
    y_max: u64,
}

impl Frame {
    const WIDTH: f64 = 1000.0;
    const HEIGHT: f64 = 480.0;

    fn new(r: &PlanReport, sram: Option<u64>) -> Frame {
        let (left, top, right, bottom) = (80.0, 50.0, 30.0, 60.0);
        let (plot_w, plot_h) = (Self::WIDTH - left - right, Self::HEIGHT - top - bottom);
        let arena = r.arena_bytes.max(1);
        // A budget below or near the arena is drawn; one far above it would flatten the chart.
        let y_max = match sram {
            Some(b) if b <= arena.saturating_mul(2) => arena.max(b),
            _ => arena,
        };
        let steps = r.steps.len().max(1) as f64;
        Frame { left, top, plot_w, plot_h, step_px: plot_w / steps, px_per_byte: plot_h / y_max as f64, y_max }
    }

    fn x(&self, step: f64) -> f64 {
        self.left + step * self.step_px
    }

    fn y(&self, byte: u64) -> f64 {
        self.top + (self.y_max as f64 - byte as f64) * self.px_per_byte
    }
}

/// The arena buffers (roots and scratch), each once.
fn arena_buffers(r: &PlanReport) -> impl Iterator<Item = &TensorReport> {
    r.tensors.iter().filter(|t| t.buffer.is_some() && t.alias_of.is_none())
}

/// The memory timeline as a standalone SVG document.
fn svg(r: &PlanReport, sram: Option<u64>) -> String {
    let f = Frame::new(r, sram);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="11" data-plot-left="{:.3}" data-plot-top="{:.3}" data-step-px="{:.6}" data-px-per-byte="{:.9}" data-y-max="{}" data-steps="{}" data-arena="{}">"#,
        f.left,
        f.top,
        f.step_px,
        f.px_per_byte,
        f.y_max,
        r.steps.len(),
        r.arena_bytes,
        w = Frame::WIDTH,
        h = Frame::HEIGHT,
    );
    let _ = writeln!(
        s,
        r#"<title>{}: arena {} B, lower bound {} B at step {}</title>"#,
        esc(&r.model),
        r.arena_bytes,
        r.lower_bound_bytes,
        r.lower_bound_step
    );
    let _ = writeln!(
        s,
        r##"<text x="{:.1}" y="20" font-size="14" font-weight="bold">{}: arena {} B ({}), lower bound {} B, {}{}</text>"##,
        f.left,
        esc(&r.model),
        r.arena_bytes,
        esc(&human(r.arena_bytes)),
        r.lower_bound_bytes,
        r.algorithm.name(),
        if r.optimal { ", optimal" } else { "" }
    );
    // Plot background and axes.
    let _ = writeln!(
        s,
        r##"<g class="frame"><path d="M{l:.2},{t:.2} H{r:.2} V{b:.2} H{l:.2} Z" fill="#fafafa" stroke="#888"/></g>"##,
        l = f.left,
        t = f.top,
        r = f.left + f.plot_w,
        b = f.top + f.plot_h
    );
    let n = r.steps.len();
    let every = n.div_ceil(25).max(1);
    s.push_str("<g class=\"x-axis\" text-anchor=\"middle\">\n");
    for i in (0..n).step_by(every) {
        let x = f.x(i as f64 + 0.5);
        let _ = writeln!(s, r#"<text x="{x:.2}" y="{:.2}">{i}</text>"#, f.top + f.plot_h + 14.0);
    }
    let _ =
        writeln!(s, r#"<text x="{:.2}" y="{:.2}">step</text></g>"#, f.left + f.plot_w / 2.0, f.top + f.plot_h + 32.0);
    s.push_str("<g class=\"y-axis\" text-anchor=\"end\">\n");
    for k in 0..=4u64 {
        let byte = f.y_max * k / 4;
        let y = f.y(byte);
        let _ = writeln!(
            s,
            r##"<path d="M{:.2},{y:.2} H{:.2}" stroke="#ddd"/><text x="{:.2}" y="{:.2}">{byte}</text>"##,
            f.left,
            f.left + f.plot_w,
            f.left - 4.0,
            y + 4.0
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="14" y="{:.2}" transform="rotate(-90 14 {:.2})" text-anchor="middle">arena offset (bytes)</text></g>"#,
        f.top + f.plot_h / 2.0,
        f.top + f.plot_h / 2.0
    );
    // One rect per arena buffer.
    s.push_str("<g class=\"buffers\">\n");
    for (k, t) in arena_buffers(r).enumerate() {
        let (off, first, last) = (t.offset.unwrap_or(0), t.first_step.unwrap_or(0), t.last_step.unwrap_or(0));
        let x = f.x(first as f64);
        let w = (last - first + 1) as f64 * f.step_px;
        let y = f.y(off + t.size);
        let h = t.size as f64 * f.px_per_byte;
        let fill = if t.storage == StorageKind::Scratch {
            "#bbbbbb".to_owned()
        } else {
            format!("hsl({}, 60%, 65%)", (k * 137) % 360)
        };
        let _ = writeln!(
            s,
            r##"<rect class="buf" x="{x:.3}" y="{y:.3}" width="{w:.3}" height="{h:.3}" fill="{fill}" stroke="#333" stroke-width="0.5" data-name="{name}" data-offset="{off}" data-size="{size}" data-first="{first}" data-last="{last}" data-storage="{storage}" data-shape="{shape}"><title>{name} {shape}: bytes {off}..{end}, steps {first}..={last}</title></rect>"##,
            name = esc(&t.name),
            size = t.size,
            storage = if t.storage == StorageKind::Scratch { "scratch" } else { "arena" },
            shape = shape(&t.shape),
            end = off + t.size,
        );
        let chars = (w / 6.5) as usize;
        if h >= 12.0 && chars >= 4 {
            let label: String = if t.name.chars().count() > chars {
                t.name.chars().take(chars.saturating_sub(1)).chain(std::iter::once('…')).collect()
            } else {
                t.name.clone()
            };
            let _ = writeln!(
                s,
                r#"<text class="label" x="{:.2}" y="{:.2}" pointer-events="none">{}</text>"#,
                x + 3.0,
                y + h / 2.0 + 4.0,
                esc(&label)
            );
        }
    }
    s.push_str("</g>\n");
    // The peak step, drawn over the buffers.
    let peak = r.lower_bound_step as f64;
    let _ = writeln!(
        s,
        r##"<g class="peak" data-step="{}"><path d="M{x:.2},{:.2} V{:.2}" stroke="#d00" stroke-width="2" stroke-dasharray="5 3"/><text x="{x:.2}" y="{:.2}" fill="#d00" text-anchor="{anchor}">peak: step {}, {} B live</text></g>"##,
        r.lower_bound_step,
        f.top,
        f.top + f.plot_h,
        f.top - 16.0,
        r.lower_bound_step,
        r.lower_bound_bytes,
        x = f.x(peak + 0.5),
        anchor = if 2 * r.lower_bound_step as usize <= n { "start" } else { "end" }
    );
    // Arena top and budget.
    let _ = writeln!(
        s,
        r##"<g class="arena-top" data-bytes="{a}"><path d="M{l:.2},{y:.2} H{r:.2}" stroke="#000"/><text x="{r:.2}" y="{:.2}" text-anchor="end">arena {a} B</text></g>"##,
        f.y(r.arena_bytes) - 3.0,
        a = r.arena_bytes,
        l = f.left,
        r = f.left + f.plot_w,
        y = f.y(r.arena_bytes)
    );
    if let Some(b) = sram {
        if b <= f.y_max {
            let _ = writeln!(
                s,
                r##"<g class="budget" data-bytes="{b}"><path d="M{l:.2},{y:.2} H{r:.2}" stroke="#06c" stroke-width="2" stroke-dasharray="8 4"/><text x="{l:.2}" y="{:.2}" fill="#06c">sram budget {b} B</text></g>"##,
                f.y(b) - 3.0,
                l = f.left + 4.0,
                r = f.left + f.plot_w,
                y = f.y(b)
            );
        } else {
            let _ = writeln!(
                s,
                r##"<g class="budget" data-bytes="{b}"><text x="{:.2}" y="{:.2}" fill="#06c" text-anchor="end">sram budget {b} B (above the chart)</text></g>"##,
                f.left + f.plot_w,
                f.top - 30.0
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

// ---------------------------------------------------------------------------------------------
// HTML

const CSS: &str = "body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}\
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.5em}\
#tip{position:fixed;pointer-events:none;background:#222;color:#fff;padding:4px 8px;border-radius:4px;\
font:12px monospace;white-space:pre;display:none;z-index:1}\
rect.buf:hover{stroke:#000;stroke-width:2}\
table{border-collapse:collapse;font:12px monospace}td,th{padding:1px 10px;text-align:right;border-bottom:1px solid #eee}\
td.l,th.l{text-align:left}tr.peak td{background:#fee}";

const JS: &str = "(function(){var tip=document.getElementById('tip');\
var rects=document.querySelectorAll('rect.buf');\
rects.forEach(function(r){var d=r.dataset;\
r.addEventListener('mousemove',function(e){\
tip.textContent=d.name+' '+d.shape+'\\nbytes '+d.offset+'..'+(Number(d.offset)+Number(d.size))+' ('+d.size+' B, '+d.storage+')\\nlive steps '+d.first+'..='+d.last;\
tip.style.display='block';tip.style.left=(e.clientX+14)+'px';tip.style.top=(e.clientY+14)+'px';});\
r.addEventListener('mouseleave',function(){tip.style.display='none';});});\
document.body.setAttribute('data-buffers',String(rects.length));})();";

/// A self-contained page: summary, the SVG timeline with tooltips, the schedule and the device map.
fn html(p: &Program, r: &PlanReport, sram: Option<u64>) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>sramfit plan: {m}</title><style>{CSS}</style></head>\n<body>\n<h1>sramfit plan: {m}</h1>\n",
        m = esc(&r.model)
    );
    let _ = writeln!(
        s,
        "<p>Arena <b>{} B</b> ({}), lower bound {} B at step {}, naive {} B, weights {} B in flash; planner {}{}.{}</p>",
        r.arena_bytes,
        esc(&human(r.arena_bytes)),
        r.lower_bound_bytes,
        r.lower_bound_step,
        r.naive_bytes,
        r.weight_bytes,
        r.algorithm.name(),
        if r.optimal { " (optimal)" } else { "" },
        match sram {
            Some(b) if r.arena_bytes <= b => format!(" Fits the sram budget of {b} B."),
            Some(b) => format!(" <b>Does not fit</b> the sram budget of {b} B ({} B over).", r.arena_bytes - b),
            None => String::new(),
        }
    );
    s.push_str("<div id=\"chart\">\n");
    s += &svg(r, sram);
    s.push_str("</div>\n<div id=\"tip\"></div>\n<h2>Schedule</h2>\n<table>\n<tr><th>step</th><th class=\"l\">op</th><th class=\"l\">node</th><th class=\"l\">output</th><th class=\"l\">shape</th><th class=\"l\">arena bytes</th><th class=\"l\">live steps</th><th>live bytes</th><th>MACs</th></tr>\n");
    for (i, (step, node)) in r.steps.iter().zip(&p.graph.nodes).enumerate() {
        let out = &r.tensors[node.output];
        let _ = writeln!(
            s,
            "<tr{}><td>{i}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td></tr>",
            if i as u32 == r.lower_bound_step { " class=\"peak\"" } else { "" },
            esc(&step.op),
            esc(&step.node),
            esc(&out.name),
            shape(&out.shape),
            esc(&place(out)),
            lifetime(out),
            grouped(step.live_bytes),
            grouped(step.macs)
        );
    }
    s.push_str("</table>\n<h2>Device map</h2>\n<table>\n");
    for (mem, entries) in [("SRAM", &r.device.sram), ("flash", &r.device.flash)] {
        for e in entries {
            let b = match e.bytes {
                Some(b) if e.estimate => format!("~{b} B"),
                Some(b) => format!("{b} B"),
                None => "unknown".into(),
            };
            let _ = writeln!(
                s,
                "<tr><td class=\"l\">{mem}</td><td class=\"l\">{}</td><td>{b}</td><td class=\"l\">{}</td></tr>",
                esc(&e.name),
                esc(&e.note)
            );
        }
    }
    let _ = write!(s, "</table>\n<script>{JS}</script>\n</body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(1234567), "1,234,567");
    }
}
