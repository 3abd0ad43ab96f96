//! The report as one self-contained HTML page: tables and hand-written SVG charts, no
//! scripts, no external fetches.

use super::{Distribution, Report};

/// Escapes text for HTML.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A bar chart: one group per label, one bar (or stack segment) per series.
fn bar_chart(
    title: &str,
    labels: &[String],
    series: &[(&str, &str, Vec<f64>)],
    stacked: bool,
) -> String {
    let (w, h) = (720.0, 320.0);
    let (left, right, top, bottom) = (60.0, 170.0, 36.0, 56.0);
    let plot_w = w - left - right;
    let plot_h = h - top - bottom;
    let max = (0..labels.len())
        .map(|i| {
            if stacked {
                series.iter().map(|s| s.2[i]).sum::<f64>()
            } else {
                series.iter().map(|s| s.2[i]).fold(0.0, f64::max)
            }
        })
        .fold(0.0, f64::max)
        .max(1.0);
    // Round the axis up so its four ticks are round numbers.
    let step = nice_step(max / 4.0);
    let max = step * 4.0;
    let mut out = format!(
        r#"<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="{t}">
<text x="{left}" y="22" font-size="15" font-weight="bold">{t}</text>
"#,
        t = esc(title)
    );
    // Axis and grid.
    for k in 0..=4 {
        let v = max * k as f64 / 4.0;
        let y = top + plot_h - plot_h * k as f64 / 4.0;
        out.push_str(&format!(
            r##"<line x1="{left}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>
"##,
            left + plot_w,
            left - 6.0,
            y + 4.0,
            fmt_num(v)
        ));
    }
    let group = plot_w / labels.len().max(1) as f64;
    let bar_w = if stacked {
        group * 0.6
    } else {
        group * 0.8 / series.len().max(1) as f64
    };
    for (i, label) in labels.iter().enumerate() {
        let gx = left + group * i as f64 + group * 0.1;
        let mut base = 0.0;
        for (j, (name, color, values)) in series.iter().enumerate() {
            let v = values[i];
            let bh = plot_h * v / max;
            let (x, y) = if stacked {
                (gx + group * 0.1, top + plot_h - plot_h * (base + v) / max)
            } else {
                (gx + bar_w * j as f64, top + plot_h - bh)
            };
            if v > 0.0 {
                out.push_str(&format!(
                    r#"<rect x="{x:.1}" y="{y:.1}" width="{bar_w:.1}" height="{bh:.1}" fill="{color}"><title>{}: {} {}</title></rect>
"#,
                    esc(label),
                    esc(name),
                    fmt_num(v)
                ));
            }
            base += v;
        }
        out.push_str(&format!(
            r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>
"#,
            left + group * (i as f64 + 0.5),
            top + plot_h + 16.0,
            esc(label)
        ));
    }
    // Legend.
    for (j, (name, color, _)) in series.iter().enumerate() {
        let y = top + 4.0 + 18.0 * j as f64;
        out.push_str(&format!(
            r#"<rect x="{:.1}" y="{y:.1}" width="12" height="12" fill="{color}"/><text x="{:.1}" y="{:.1}" font-size="12">{}</text>
"#,
            left + plot_w + 14.0,
            left + plot_w + 32.0,
            y + 10.0,
            esc(name)
        ));
    }
    out.push_str("</svg>\n");
    out
}

/// The smallest round step (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10^k) at or above `x`.
fn nice_step(x: f64) -> f64 {
    let mag = 10f64.powf(x.max(1e-9).log10().floor());
    let step = [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= x)
        .unwrap_or(10.0 * mag);
    if x >= 0.25 {
        step.max(1.0).ceil()
    } else {
        step
    }
}

fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.3}")
    }
}

fn histogram_chart(title: &str, unit: &str, d: &Distribution, color: &str) -> String {
    let mut prev: Option<f64> = None;
    let labels: Vec<String> = d
        .histogram
        .iter()
        .map(|b| {
            let l = match (prev, b.upto) {
                (None, Some(u)) => format!("≤ {}", fmt_num(u)),
                (Some(p), Some(u)) => format!("{}–{}", fmt_num(p), fmt_num(u)),
                (Some(p), None) => format!("> {}", fmt_num(p)),
                (None, None) => "all".into(),
            };
            prev = b.upto;
            l
        })
        .collect();
    let values: Vec<f64> = d.histogram.iter().map(|b| b.count as f64).collect();
    bar_chart(title, &labels, &[(unit, color, values)], false)
}

fn dist_row(name: &str, d: &Distribution) -> String {
    format!(
        "<tr><th>{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
        esc(name),
        d.count,
        d.min,
        d.p25,
        d.median,
        d.p75,
        d.max,
        d.mean
    )
}

/// The whole page.
pub fn page(r: &Report) -> String {
    let labels: Vec<String> = r
        .transitions
        .iter()
        .map(|t| format!("{} → {}", t.from, t.to))
        .collect();
    let col = |f: &dyn Fn(&super::Transition) -> u64| -> Vec<f64> {
        r.transitions.iter().map(|t| f(t) as f64).collect()
    };
    let changes = bar_chart(
        "What became of the URLs, per pair of sweeps",
        &labels,
        &[
            ("unchanged", "#4c9a2a", col(&|t| t.urls.unchanged)),
            ("changed ≥ 0.9", "#a4d36b", col(&|t| t.urls.changed_minor)),
            ("changed 0.5–0.9", "#f2c14e", col(&|t| t.urls.changed_major)),
            ("rewritten", "#f78154", col(&|t| t.urls.rewritten)),
            ("new", "#5fa8d3", col(&|t| t.urls.new)),
            ("gone", "#9b2226", col(&|t| t.urls.gone)),
            ("redirected", "#7b2cbf", col(&|t| t.urls.redirected)),
        ],
        true,
    );
    let moves = bar_chart(
        "Content moves: within a host and across hosts",
        &labels,
        &[
            ("within host", "#1b998b", col(&|t| t.moves.within_host)),
            ("across hosts", "#e84855", col(&|t| t.moves.across_hosts)),
        ],
        false,
    );
    let lifetimes = histogram_chart(
        "Page lifetimes (days from first to last live capture)",
        "URLs",
        &r.lifetimes.days,
        "#3d5a80",
    );
    let rates = histogram_chart(
        "Change rates (estimated changes per day)",
        "URLs",
        &r.change_rate.per_day,
        "#ee6c4d",
    );
    let mut h = String::from(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>tidemark report</title>
<style>
body { font-family: sans-serif; margin: 24px; color: #222; }
table { border-collapse: collapse; margin: 8px 0 24px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f3f3f3; }
td.l, th.l { text-align: left; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
</style></head><body>
<h1>tidemark report</h1>
"#,
    );
    let news = super::headlines(r);
    if !news.is_empty() {
        h.push_str("<ul class=\"news\">\n");
        for line in &news {
            h.push_str(&format!("<li>{}</li>\n", esc(line)));
        }
        h.push_str("</ul>\n");
    }
    h.push_str("<div class=\"charts\">\n");
    h.push_str(&changes);
    h.push_str(&moves);
    h.push_str(&lifetimes);
    h.push_str(&rates);
    h.push_str("</div>\n<h2>Sweeps</h2>\n<table><tr><th class=\"l\">sweep</th><th>date</th><th>live URLs</th><th>docs</th><th>births</th><th>deaths</th></tr>\n");
    for w in &r.sweeps {
        h.push_str(&format!(
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            esc(&w.label),
            esc(&w.date),
            w.urls,
            w.docs,
            w.births,
            w.deaths
        ));
    }
    h.push_str("</table>\n<h2>Pairs of sweeps</h2>\n<table><tr><th class=\"l\">sweeps</th><th>unchanged</th><th>changed ≥ 0.9</th><th>changed 0.5–0.9</th><th>rewritten</th><th>new</th><th>gone</th><th>redirected</th><th>moves within host</th><th>moves across hosts</th><th>mirrored</th></tr>\n");
    for (t, l) in r.transitions.iter().zip(&labels) {
        h.push_str(&format!("<tr><td class=\"l\">{}</td>", esc(l)));
        for c in t.counts() {
            h.push_str(&format!("<td>{c}</td>"));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n<h2>Pairs of sweeps by content</h2>\n<p>The same URLs classed with the templates of their hosts left out: a redesign changes every page's text, not its content.</p>\n<table><tr><th class=\"l\">sweeps</th><th>unchanged</th><th>changed ≥ 0.9</th><th>changed 0.5–0.9</th><th>rewritten</th><th>hosts that changed their template</th></tr>\n");
    for (t, l) in r.transitions.iter().zip(&labels) {
        let c = &t.content;
        let hosts = t
            .template_changes
            .iter()
            .filter(|c| c.is_redesign())
            .count();
        h.push_str(&format!(
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{hosts}</td></tr>\n",
            esc(l),
            c.unchanged,
            c.changed_minor,
            c.changed_major,
            c.rewritten
        ));
    }
    h.push_str("</table>\n<h2>Distributions</h2>\n<table><tr><th class=\"l\"></th><th>URLs</th><th>min</th><th>p25</th><th>median</th><th>p75</th><th>max</th><th>mean</th></tr>\n");
    h.push_str(&dist_row("lifetime (days)", &r.lifetimes.days));
    h.push_str(&dist_row("changes per day", &r.change_rate.per_day));
    h.push_str(&format!(
        "</table>\n<p>{} URLs still live in the last sweep (their lifetimes are lower bounds). Change rates: Cho &amp; Garcia-Molina's bias-reduced estimator, sweeps {} days apart on average.</p>\n",
        r.lifetimes.still_live, r.change_rate.interval_days
    ));
    for (title, hosts) in [
        ("Hosts by moves", &r.hosts),
        ("Hosts by change rate", &r.hosts_by_change_rate),
    ] {
        h.push_str(&format!("<h2>{title}</h2>\n<table><tr><th class=\"l\">host</th><th>URLs</th><th>moves</th><th>changes per day: p25</th><th>median</th><th>p75</th></tr>\n"));
        for x in hosts {
            h.push_str(&format!(
                "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                esc(&x.host),
                x.urls,
                x.moves,
                x.change_rate_p25,
                x.change_rate_median,
                x.change_rate_p75
            ));
        }
        h.push_str("</table>\n");
    }
    h.push_str("</body></html>\n");
    h
}
