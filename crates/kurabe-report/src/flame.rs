//! Flame graphs of a profile (`--profile`) in the HTML report, as inline
//! SVG: per variant against the baseline a differential one — the
//! candidate's stacks, each frame as wide as its CPU per execution (or
//! request), red where it grew against the baseline and blue where it
//! shrank, the deeper the colour the larger the change (Brendan Gregg's
//! differential flame graphs) — and each run's own graph one click away
//! (`<details>`, no script). Hovering a frame shows its name and figures
//! (`<title>`).
//!
//! Hand-written rather than inferno's: inferno 0.12's flame graph, its
//! default features off, added 152 080 bytes to a small release binary
//! (fat LTO, opt-level "s": quick-xml, num-format, rgb, str_stack,
//! ahash come with it), and kurabe's must stay under 15 MB (issue 27)
//! with ~215 KB to spare — for a drawing that is a hundred lines here. Frames
//! narrower than [`MIN_SHARE`] of the graph are left out, so a graph is
//! bounded however many stacks a run had. Every name goes through
//! [`esc`]. Must not compute the comparison (kurabe-model does).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use kurabe_model::profile::{ProfileReport, RunProfile};

use crate::escape::html as esc;

/// Graph width in SVG units.
const WIDTH: f64 = 1100.0;
/// Height of one frame's row.
const ROW: f64 = 17.0;
/// Frames narrower than this share of the whole are not drawn.
const MIN_SHARE: f64 = 0.001;
/// Rows drawn at most (deeper frames are cut).
const MAX_DEPTH: usize = 80;
/// Width of one character of a frame's label, about, in SVG units.
const CHAR: f64 = 6.6;

/// One frame of the merged tree: its CPU in the graph drawn and how
/// much it changed against the baseline (ms per execution or request).
#[derive(Default)]
struct Node {
    value: f64,
    delta: f64,
    children: BTreeMap<String, Node>,
}

impl Node {
    /// Add `value` (and `delta`) to every frame of `stack` (`;`-joined, root first).
    fn add(&mut self, stack: &str, value: f64, delta: f64) {
        let mut node = self;
        node.value += value;
        node.delta += delta;
        for frame in stack.split(';').take(MAX_DEPTH) {
            node = node.children.entry(frame.to_owned()).or_default();
            node.value += value;
            node.delta += delta;
        }
    }

    /// Deepest row with a frame wide enough to draw.
    fn depth(&self, min: f64) -> usize {
        let deeper = self.children.values().filter(|c| c.value >= min);
        deeper.map(|c| 1 + c.depth(min)).max().unwrap_or(0)
    }

    /// Largest |delta| of a drawn frame below this one.
    fn max_delta(&self, min: f64) -> f64 {
        let drawn = self.children.values().filter(|c| c.value >= min);
        drawn.fold(0.0, |m, c| m.max(c.delta.abs()).max(c.max_delta(min)))
    }
}

/// The profile's flame graphs: per comparison the sentence and the
/// differential graph, then every run's own graph folded away; for a
/// profile without comparisons (one variant), the variant's graph.
pub(crate) fn html(p: &ProfileReport, out: &mut dyn Write) -> io::Result<()> {
    let per = match p.per {
        kurabe_model::profile::Per::Execution => "exec",
        kurabe_model::profile::Per::Request => "req",
    };
    writeln!(out, "<h3>Profile: where the CPU went</h3>")?;
    for c in &p.comparisons {
        let text = crate::profile::sentence(c, per);
        writeln!(out, "<p class=\"note\">{}</p>", esc(&text))?;
        let (base, cand) = (p.mean_stacks(&c.baseline), p.mean_stacks(&c.candidate));
        let caption = format!(
            "{} against {}: red grew, blue shrank (ms/{per})",
            c.candidate, c.baseline
        );
        figure(&caption, &diff_tree(&base, &cand), per, true, out)?;
    }
    if p.comparisons.is_empty() {
        if let Some(v) = p.runs.first().map(|r| r.variant.as_str()) {
            let tree = diff_tree(&BTreeMap::new(), &p.mean_stacks(v));
            figure(&format!("{v} (ms/{per})"), &tree, per, false, out)?;
        }
    }
    writeln!(out, "<details><summary>Each run's flame graph</summary>")?;
    for r in &p.runs {
        writeln!(
            out,
            "<details><summary>{} · round {}</summary>",
            esc(&r.variant),
            r.round
        )?;
        let caption = format!("{} · round {} (ms/{per})", r.variant, r.round);
        figure(&caption, &run_tree(&r.profile), per, false, out)?;
        writeln!(out, "</details>")?;
    }
    writeln!(out, "</details>")
}

/// The candidate's frames as wide as its CPU, each with its change
/// against the baseline (frames only the baseline had are 0 wide, and
/// their loss counts in their callers' change).
fn diff_tree(base: &BTreeMap<&str, f64>, cand: &BTreeMap<&str, f64>) -> Node {
    let mut root = Node::default();
    for (stack, v) in cand {
        root.add(stack, *v, *v);
    }
    for (stack, v) in base {
        root.add(stack, 0.0, -*v);
    }
    root
}

/// One run's frames, ms per execution (or request).
fn run_tree(r: &RunProfile) -> Node {
    let mut root = Node::default();
    for s in &r.stacks {
        root.add(&s.stack, r.ms_per(s.samples), 0.0);
    }
    root
}

/// One graph in a `<figure>`: `diff` colours by change, else by name.
fn figure(
    caption: &str,
    root: &Node,
    per: &str,
    diff: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let min = root.value * MIN_SHARE;
    let rows = root.depth(min).max(1);
    let height = rows as f64 * ROW;
    let mut svg = String::new();
    let graph = Graph {
        scale: WIDTH / root.value.max(f64::MIN_POSITIVE),
        min,
        max_delta: if diff { root.max_delta(min) } else { 0.0 },
        bottom: height,
        per,
    };
    graph.frames(root, 0.0, 0, &mut svg);
    writeln!(
        out,
        "<figure><figcaption>{}</figcaption><svg viewBox=\"0 0 {WIDTH} {height}\" width=\"{WIDTH}\" height=\"{height}\" role=\"img\" font-size=\"11\">{svg}</svg></figure>",
        esc(caption)
    )
}

/// How a graph's frames are placed and coloured.
struct Graph<'a> {
    /// SVG units per ms.
    scale: f64,
    /// Narrowest frame drawn, ms.
    min: f64,
    /// Largest change of a frame (0: not a differential graph).
    max_delta: f64,
    /// y of the root row's bottom (flames grow up).
    bottom: f64,
    per: &'a str,
}

impl Graph<'_> {
    /// Draw `node`'s children from `x`, on row `depth`, and theirs above.
    fn frames(&self, node: &Node, mut x: f64, depth: usize, svg: &mut String) {
        for (name, child) in &node.children {
            if child.value < self.min {
                continue;
            }
            let w = child.value * self.scale;
            self.frame(name, child, x, depth, svg);
            self.frames(child, x, depth + 1, svg);
            x += w;
        }
    }

    /// One frame: its box, its hover text and, where it fits, its name.
    fn frame(&self, name: &str, n: &Node, x: f64, depth: usize, svg: &mut String) {
        let (w, y) = (n.value * self.scale, self.bottom - (depth + 1) as f64 * ROW);
        let change = match self.max_delta > 0.0 {
            true => format!(", {:+.3} ms/{} against the baseline", n.delta, self.per),
            false => String::new(),
        };
        let _ = write!(
            svg,
            "<g><title>{} — {:.3} ms/{}{change}</title><rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\" rx=\"2\"/>",
            esc(name),
            n.value,
            self.per,
            (w - 0.5).max(0.1),
            ROW - 1.0,
            self.colour(name, n.delta)
        );
        let fits = ((w - 6.0) / CHAR) as usize;
        if fits >= 3 {
            let label: String = match name.chars().count() > fits {
                true => name.chars().take(fits - 1).chain(['…']).collect(),
                false => name.to_owned(),
            };
            let _ = write!(
                svg,
                "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                x + 3.0,
                y + ROW - 5.0,
                esc(&label)
            );
        }
        svg.push_str("</g>");
    }

    /// Red for grown, blue for shrunk, by how much; a warm colour by
    /// name in a graph that compares nothing.
    fn colour(&self, name: &str, delta: f64) -> String {
        if self.max_delta <= 0.0 {
            let h = name
                .bytes()
                .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
            return format!("rgb(235,{},{})", 110 + h % 120, 40 + (h >> 8) % 50);
        }
        let s = (delta.abs() / self.max_delta).min(1.0);
        let fade = (235.0 - 180.0 * s) as u8;
        match delta >= 0.0 {
            true => format!("rgb(250,{fade},{fade})"),
            false => format!("rgb({fade},{fade},250)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grown_frame_is_red_a_shrunk_one_blue_and_names_are_escaped() {
        let base = BTreeMap::from([("p;main;a", 2.0), ("p;main;<b>", 2.0)]);
        let cand = BTreeMap::from([("p;main;a", 6.0), ("p;main;<b>", 1.0)]);
        let tree = diff_tree(&base, &cand);
        let main = &tree.children["p"].children["main"];
        assert_eq!(main.value, 7.0);
        assert_eq!(main.delta, 3.0);
        let mut out = Vec::new();
        figure("x", &tree, "exec", true, &mut out).unwrap();
        let svg = String::from_utf8(out).unwrap();
        assert!(svg.contains("&lt;b&gt;") && !svg.contains("<b>"), "{svg}");
        let a = svg.split("<title>a —").nth(1).unwrap();
        assert!(
            a.contains("fill=\"rgb(250,55,55)\""),
            "the largest change, deepest red: {a}"
        );
        let b = svg.split("<title>&lt;b&gt; —").nth(1).unwrap();
        assert!(
            b.contains("fill=\"rgb(190,190,250)\""),
            "a third of it, pale blue: {b}"
        );
        kurabe_testkit::html::balanced(&svg).unwrap();
    }

    #[test]
    fn frames_below_a_thousandth_are_left_out() {
        let cand = BTreeMap::from([("p;big", 10_000.0), ("p;tiny", 1.0)]);
        let mut out = Vec::new();
        figure(
            "x",
            &diff_tree(&BTreeMap::new(), &cand),
            "req",
            false,
            &mut out,
        )
        .unwrap();
        let svg = String::from_utf8(out).unwrap();
        assert!(svg.contains("big") && !svg.contains("tiny"), "{svg}");
    }
}
