//! The report as one self-contained HTML page: tables and SVG charts, no scripts, no
//! external fetches. The page is an askama template (`templates/report.html`, checked at
//! build time, every text escaped); this module lays the charts out and hands the
//! template their shapes.

use askama::Template;

use super::changes::{ChangeList, ChangeRow};
use super::{ContentCounts, Distribution, HostRow, Report};

/// The page's template and what it shows.
#[derive(Template)]
#[template(path = "report.html")]
struct Page<'a> {
    report: &'a Report,
    news: Vec<String>,
    charts: Vec<Chart>,
    pairs: Vec<Pair<'a>>,
    distributions: Vec<(&'static str, &'a Distribution)>,
    host_tables: Vec<(&'static str, &'a [HostRow])>,
    changes: Option<&'a ChangeList>,
    change_pages: Vec<Vec<ChangeView>>,
}

/// Rows of the change list a page of the HTML section holds.
pub const CHANGE_ROWS_PER_PAGE: usize = 50;

/// One row of the change list as the page prints it.
struct ChangeView {
    score: String,
    kind: &'static str,
    status: String,
    content: String,
    full: String,
    words: String,
    links: String,
    url: String,
    notes: Vec<String>,
}

impl ChangeView {
    fn of(r: &ChangeRow) -> ChangeView {
        let f = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_default();
        let code = |v: Option<u16>| v.map(|v| v.to_string()).unwrap_or_else(|| "–".into());
        let pair = |x: Option<u64>, y: Option<u64>| match (x, y) {
            (Some(x), Some(y)) => format!("−{x} / +{y}"),
            _ => String::new(),
        };
        let mut notes = Vec::new();
        if r.title_changed {
            notes.push(format!(
                "title: “{}” → “{}”",
                r.title_before.as_deref().unwrap_or(""),
                r.title_after.as_deref().unwrap_or("")
            ));
        }
        if let Some(t) = &r.redirect_to {
            notes.push(format!("redirects to {t}"));
        }
        if let Some(t) = &r.moved_to {
            notes.push(format!("moved to {t}"));
        }
        if let Some(why) = &r.unread {
            notes.push(format!("not read: {why}"));
        }
        ChangeView {
            score: format!("{:.3}", r.score),
            kind: r.kind,
            status: if r.kind == "template_only" {
                format!("{} pages", r.pages)
            } else {
                format!("{} → {}", code(r.status_before), code(r.status_after))
            },
            content: f(r.content_resemblance),
            full: f(r.resemblance),
            words: pair(r.words_removed, r.words_added),
            links: pair(r.links_removed, r.links_added),
            url: r.url.clone(),
            notes,
        }
    }
}

/// One pair of sweeps' rows.
struct Pair<'a> {
    label: String,
    counts: [u64; 13],
    content: &'a ContentCounts,
    redesigned_hosts: usize,
}

/// A bar chart laid out: coordinates as text (one decimal).
struct Chart {
    title: String,
    width: f64,
    height: f64,
    left: f64,
    right_edge: String,
    ticks: Vec<Tick>,
    bars: Vec<Bar>,
    labels: Vec<Label>,
    legend: Vec<Legend>,
}

struct Tick {
    y: String,
    label_x: String,
    label_y: String,
    label: String,
}

struct Bar {
    x: String,
    y: String,
    width: String,
    height: String,
    color: &'static str,
    title: String,
}

struct Label {
    x: String,
    y: String,
    text: String,
}

struct Legend {
    x: String,
    y: String,
    text_x: String,
    text_y: String,
    color: &'static str,
    text: String,
}

fn at(v: f64) -> String {
    format!("{v:.1}")
}

/// A bar chart: one group per label, one bar (or stack segment) per series.
fn bar_chart(
    title: &str,
    labels: &[String],
    series: &[(&str, &'static str, Vec<f64>)],
    stacked: bool,
) -> Chart {
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
    let ticks = (0..=4)
        .map(|k| {
            let y = top + plot_h - plot_h * k as f64 / 4.0;
            Tick {
                y: at(y),
                label_x: at(left - 6.0),
                label_y: at(y + 4.0),
                label: fmt_num(max * k as f64 / 4.0),
            }
        })
        .collect();
    let group = plot_w / labels.len().max(1) as f64;
    let bar_w = if stacked {
        group * 0.6
    } else {
        group * 0.8 / series.len().max(1) as f64
    };
    let mut bars = Vec::new();
    let mut axis = Vec::new();
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
                bars.push(Bar {
                    x: at(x),
                    y: at(y),
                    width: at(bar_w),
                    height: at(bh),
                    color,
                    title: format!("{label}: {name} {}", fmt_num(v)),
                });
            }
            base += v;
        }
        axis.push(Label {
            x: at(left + group * (i as f64 + 0.5)),
            y: at(top + plot_h + 16.0),
            text: label.clone(),
        });
    }
    let legend = series
        .iter()
        .enumerate()
        .map(|(j, (name, color, _))| {
            let y = top + 4.0 + 18.0 * j as f64;
            Legend {
                x: at(left + plot_w + 14.0),
                y: at(y),
                text_x: at(left + plot_w + 32.0),
                text_y: at(y + 10.0),
                color,
                text: name.to_string(),
            }
        })
        .collect();
    Chart {
        title: title.to_string(),
        width: w,
        height: h,
        left,
        right_edge: at(left + plot_w),
        ticks,
        bars,
        labels: axis,
        legend,
    }
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

fn histogram_chart(title: &str, unit: &str, d: &Distribution, color: &'static str) -> Chart {
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

/// The whole page.
pub fn page(r: &Report) -> String {
    page_with_changes(r, None)
}

/// The whole page, with a change list as a section of pages of
/// [`CHANGE_ROWS_PER_PAGE`] rows (shown one at a time by their anchors, no scripts).
pub fn page_with_changes(r: &Report, changes: Option<&ChangeList>) -> String {
    let labels: Vec<String> = r
        .transitions
        .iter()
        .map(|t| format!("{} → {}", t.from, t.to))
        .collect();
    let col = |f: &dyn Fn(&super::Transition) -> u64| -> Vec<f64> {
        r.transitions.iter().map(|t| f(t) as f64).collect()
    };
    let charts = vec![
        bar_chart(
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
        ),
        bar_chart(
            "Content moves: within a host and across hosts",
            &labels,
            &[
                ("within host", "#1b998b", col(&|t| t.moves.within_host)),
                ("across hosts", "#e84855", col(&|t| t.moves.across_hosts)),
            ],
            false,
        ),
        histogram_chart(
            "Page lifetimes (days from first to last live capture)",
            "URLs",
            &r.lifetimes.days,
            "#3d5a80",
        ),
        histogram_chart(
            "Change rates (estimated changes per day)",
            "URLs",
            &r.change_rate.per_day,
            "#ee6c4d",
        ),
    ];
    let pairs = r
        .transitions
        .iter()
        .zip(labels)
        .map(|(t, label)| Pair {
            label,
            counts: t.counts(),
            content: &t.content,
            redesigned_hosts: t
                .template_changes
                .iter()
                .filter(|c| c.is_redesign())
                .count(),
        })
        .collect();
    let page = Page {
        report: r,
        news: super::headlines(r),
        charts,
        pairs,
        distributions: vec![
            ("lifetime (days)", &r.lifetimes.days),
            ("changes per day", &r.change_rate.per_day),
        ],
        host_tables: vec![
            ("Hosts by moves", &r.hosts),
            ("Hosts by change rate", &r.hosts_by_change_rate),
        ],
        changes,
        change_pages: changes
            .map(|l| {
                l.rows
                    .chunks(CHANGE_ROWS_PER_PAGE)
                    .map(|c| c.iter().map(ChangeView::of).collect())
                    .collect()
            })
            .unwrap_or_default(),
    };
    page.render().unwrap_or_else(|e| {
        format!("<!DOCTYPE html><p>the report could not be rendered: {e}</p>\n")
    })
}
