//! What happens to the web between two sweeps: pages deleted, moved, edited,
//! rewritten, mirrored, revisited or created, at the rates asked, with the truth of each.

use std::collections::BTreeMap;

use serde::Serialize;

use super::truth::{Edit, Gone, Move, Truth};
use super::web::{Content, Page, Pending, Target, Web};

/// Per-transition probabilities for each live page (they are tried in this order).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ChangeRates {
    /// Page deleted (old URL then 404 or gone).
    pub delete: f64,
    /// Page moved to a new URL (same host or another).
    pub moved: f64,
    /// A moved page is also edited a little on the way.
    pub moved_and_edited: f64,
    /// A move goes to another host.
    pub move_across_hosts: f64,
    /// Renamed and rewritten: a new URL on the same host and every sentence new (the
    /// title kept); the old URL 404 or gone, no redirect. The pages that linked it link
    /// the new URL.
    pub renamed_rewritten: f64,
    /// Rewritten: most sentences replaced (resemblance well under 0.5).
    pub rewrite: f64,
    /// Major edit: about a quarter of the sentences replaced.
    pub major_edit: f64,
    /// Minor edit: one to three sentences changed.
    pub minor_edit: f64,
    /// A page is copied to another host (both stay alive).
    pub mirror: f64,
    /// An unchanged page is written as a `revisit` record.
    pub revisit: f64,
    /// New pages per sweep, as a share of live pages.
    pub create: f64,
}

impl Default for ChangeRates {
    fn default() -> Self {
        ChangeRates {
            delete: 0.02,
            moved: 0.03,
            moved_and_edited: 0.3,
            move_across_hosts: 0.4,
            renamed_rewritten: 0.0,
            rewrite: 0.02,
            major_edit: 0.04,
            minor_edit: 0.08,
            mirror: 0.01,
            revisit: 0.3,
            create: 0.04,
        }
    }
}

pub(super) enum Planned {
    Page { index: usize, revisit: bool },
    Redirect { url: String, to: String },
    NotFound { url: String, host: usize },
}

impl Web {
    pub(super) fn edit(&mut self, c: &mut Content, share: f64, min: usize) {
        let n = c.sentences.len();
        let k = ((n as f64 * share).round() as usize).max(min).min(n.max(1));
        for _ in 0..k {
            let op = self.rng.below(4);
            let i = self.rng.below(c.sentences.len().max(1));
            match op {
                0 if c.sentences.len() > 2 => {
                    c.sentences.remove(i);
                }
                1 => {
                    let para = c.sentences.get(i).map(|s| s.0).unwrap_or(0);
                    let s = self.vocab.sentence(&mut self.rng);
                    c.sentences.insert(i.min(c.sentences.len()), (para, s));
                }
                _ => {
                    if let Some(slot) = c.sentences.get_mut(i) {
                        slot.1 = self.vocab.sentence(&mut self.rng);
                    }
                }
            }
        }
    }

    /// Keeps `old` (the page before) to settle the truth of `target` at the sweep's end
    /// against the page `new` at index `at` of the sweep's pages.
    fn defer(&mut self, target: Target, mut old: Page, new: &Page, at: usize) {
        let same_content = old.content == new.content;
        if same_content {
            old.content = Content::default();
        }
        self.pending.push(Pending {
            target,
            old,
            same_content,
            new: at,
        });
    }

    /// A page moved (`m`, its truth): the move's truth settled at the sweep's end, the
    /// page captured at its new URL.
    fn moved(
        &mut self,
        m: Move,
        page: Page,
        moved: Page,
        truth: &mut Truth,
        caps: &mut Vec<Planned>,
        next: &mut Vec<Page>,
    ) {
        truth.moves.push(m);
        self.defer(
            Target::Move(truth.moves.len() - 1),
            page,
            &moved,
            next.len(),
        );
        caps.push(Planned::Page {
            index: next.len(),
            revisit: false,
        });
        next.push(moved);
    }

    pub(super) fn evolve(
        &mut self,
        pages: Vec<Page>,
        r: &ChangeRates,
        steady: Option<usize>,
        truth: &mut Truth,
        caps: &mut Vec<Planned>,
    ) -> Vec<Page> {
        let mut next: Vec<Page> = Vec::with_capacity(pages.len() + pages.len() / 10);
        let mut mirrors: BTreeMap<u64, Vec<String>> = BTreeMap::new();
        for page in pages {
            let url = self.url(&page);
            let u = self.rng.unit();
            let mut acc = r.delete;
            if u < acc {
                let status = if self.rng.chance(0.5) {
                    Some(404)
                } else {
                    None
                };
                if status.is_some() {
                    caps.push(Planned::NotFound {
                        url: url.clone(),
                        host: page.host,
                    });
                }
                truth.deleted.push(Gone { url, status });
                continue;
            }
            acc += r.moved;
            if u < acc {
                let mut moved = page.clone();
                if self.rng.chance(r.move_across_hosts) && self.hosts.len() > 1 {
                    let mut h = self.rng.below(self.hosts.len() - 1);
                    if h >= page.host {
                        h += 1;
                    }
                    moved.host = h;
                }
                moved.path = self.new_path(moved.host);
                moved.last_full = None;
                if self.rng.chance(r.moved_and_edited) {
                    let mut c = moved.content.clone();
                    self.edit(&mut c, 0.03, 1);
                    moved.content = c;
                }
                let to = self.url(&moved);
                let old_status = match self.rng.below(10) {
                    0..=3 => Some(301),
                    4..=6 => Some(404),
                    _ => None,
                };
                match old_status {
                    Some(301) => caps.push(Planned::Redirect {
                        url: url.clone(),
                        to: to.clone(),
                    }),
                    Some(_) => caps.push(Planned::NotFound {
                        url: url.clone(),
                        host: page.host,
                    }),
                    None => {}
                }
                let m = Move {
                    from: url,
                    to,
                    old_status,
                    across_hosts: moved.host != page.host,
                    resemblance: 0.0,
                    content_resemblance: 0.0,
                    min_shingles: 0,
                    rewritten: false,
                };
                self.moved(m, page, moved, truth, caps, &mut next);
                continue;
            }
            acc += r.renamed_rewritten;
            if u < acc {
                let mut moved = page.clone();
                moved.path = self.new_path(moved.host);
                moved.last_full = None;
                let mut fresh = self.new_content();
                fresh.title = page.content.title.clone();
                moved.content = fresh;
                let old_status = self.rng.chance(0.5).then_some(404);
                if old_status.is_some() {
                    caps.push(Planned::NotFound {
                        url: url.clone(),
                        host: page.host,
                    });
                }
                let m = Move {
                    from: url,
                    to: self.url(&moved),
                    old_status,
                    across_hosts: false,
                    resemblance: 0.0,
                    content_resemblance: 0.0,
                    min_shingles: 0,
                    rewritten: true,
                };
                self.moved(m, page, moved, truth, caps, &mut next);
                continue;
            }
            let mut edited = page.clone();
            let kind = {
                acc += r.rewrite;
                if u < acc {
                    let mut c = edited.content.clone();
                    // Keep a few sentences: a rewrite, not a new page.
                    let keep = c.sentences.len() / 8;
                    let mut fresh = self.new_content();
                    fresh.sentences.truncate(c.sentences.len().max(4));
                    fresh.sentences.extend(c.sentences.drain(..keep));
                    fresh.title = c.title.clone();
                    edited.content = fresh;
                    Some("rewrite")
                } else {
                    acc += r.major_edit;
                    if u < acc {
                        let mut c = edited.content.clone();
                        self.edit(&mut c, 0.12, 2);
                        edited.content = c;
                        Some("major")
                    } else {
                        acc += r.minor_edit;
                        if u < acc {
                            let mut c = edited.content.clone();
                            let k = self.rng.range(1, 3);
                            self.edit(&mut c, 0.0, k);
                            edited.content = c;
                            Some("minor")
                        } else {
                            None
                        }
                    }
                }
            };
            let changed = match kind {
                Some(kind) if edited.content != page.content => Some(kind),
                // Same body, new template: a new doc like its predecessor.
                _ if self.template_changed(&page) => Some("template"),
                _ => None,
            };
            match changed {
                Some(kind) => {
                    truth.edits.push(Edit {
                        url: url.clone(),
                        kind,
                        resemblance: 0.0,
                        content_resemblance: 0.0,
                        min_shingles: 0,
                    });
                    // The mirror's copy (if any) goes after it: `next.len()` is its index.
                    self.defer(
                        Target::Edit(truth.edits.len() - 1),
                        page,
                        &edited,
                        next.len(),
                    );
                    edited.last_full = None;
                    caps.push(Planned::Page {
                        index: next.len(),
                        revisit: false,
                    });
                }
                None => {
                    truth.unchanged += 1;
                    let revisit = self.rng.chance(r.revisit);
                    caps.push(Planned::Page {
                        index: next.len(),
                        revisit,
                    });
                }
            }
            if self.rng.chance(r.mirror) && self.hosts.len() > 1 {
                let mut copy = edited.clone();
                let mut h = self.rng.below(self.hosts.len() - 1);
                if h >= copy.host {
                    h += 1;
                }
                copy.host = h;
                copy.path = self.new_path(copy.host);
                copy.last_full = None;
                self.next_id += 1;
                copy.id = self.next_id;
                let group = mirrors
                    .entry(edited.id)
                    .or_insert_with(|| vec![url.clone()]);
                group.push(self.url(&copy));
                next.push(edited);
                caps.push(Planned::Page {
                    index: next.len(),
                    revisit: false,
                });
                next.push(copy);
                continue;
            }
            next.push(edited);
        }
        let new_pages = match steady {
            Some(live) => live.saturating_sub(next.len()),
            None => (next.len() as f64 * r.create).round() as usize,
        };
        for _ in 0..new_pages {
            let p = self.new_page(None);
            truth.created.push(self.url(&p));
            caps.push(Planned::Page {
                index: next.len(),
                revisit: false,
            });
            next.push(p);
        }
        truth.mirror_groups = mirrors.into_values().collect();
        next
    }
}
