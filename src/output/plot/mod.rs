//! The `litehit mrc` plot: cumulative token hit rate (%) versus cache capacity (GiB), one line
//! per instance (plus the total when there are several), each instance's unlimited-capacity
//! ceiling as a dashed line and its 50/90/95/99 % knees as dots.
//!
//! The layout is drawn once onto a small [`Canvas`] trait with two backends: `svg` writes
//! vector SVG text, `raster` paints pixels itself (anti-aliased lines and circles, text through
//! `ab_glyph` with a subset of the `DejaVu` Sans font embedded from `assets/fonts/`) and encodes
//! a PNG with `flate2`. Nothing depends on system fonts or C libraries. Every plotted value is
//! exact at its sample capacity (one sample per horizontal pixel), as
//! `MrcCurves::sample_hit_rates` answers it: this file only lays the samples out.

mod raster;
mod svg;

use std::fmt::Write as _;

use ab_glyph::{Font, FontRef, PxScale, ScaleFont};

use litehit_core::display::{self, bytes_to_gib, nice_axis};
use litehit_core::projector::BYTES_PER_GIB;
use litehit_core::projector::sampling::evenly_spaced;
use litehit_report::{MrcCurves, MrcReport, QuotaPlan};

pub use raster::render_png;
pub use svg::render_svg;

/// Image width in pixels (SVG user units).
pub const PLOT_WIDTH: u32 = 1200;
/// Image height in pixels (SVG user units).
pub const PLOT_HEIGHT: u32 = 720;

const PLOT_LEFT: f64 = 92.0;
const PLOT_RIGHT: f64 = PLOT_WIDTH as f64 - 32.0;
const PLOT_TOP: f64 = 84.0;
const PLOT_BOTTOM: f64 = PLOT_HEIGHT as f64 - 72.0;

/// Tableau 10: distinguishable on white and for common colour-vision deficiencies.
const PALETTE: [Rgb; 10] = [
    Rgb(0x4e, 0x79, 0xa7),
    Rgb(0xf2, 0x8e, 0x2b),
    Rgb(0xe1, 0x57, 0x59),
    Rgb(0x76, 0xb7, 0xb2),
    Rgb(0x59, 0xa1, 0x4f),
    Rgb(0xb0, 0x7a, 0xa1),
    Rgb(0xed, 0xc9, 0x48),
    Rgb(0xff, 0x9d, 0xa7),
    Rgb(0x9c, 0x75, 0x5f),
    Rgb(0xba, 0xb0, 0xac),
];
const TOTAL_COLOR: Rgb = Rgb(0x22, 0x22, 0x22);
/// The shared pool's line (`replay --pool`), beside the total: dark violet, a colour no
/// instance gets (its CIELAB distance to every [`PALETTE`] colour and to the total's is at
/// least 78, where the red it replaced was 22 from the palette's red), so the pool never
/// reads as an instance.
const POOL_COLOR: Rgb = Rgb(0x94, 0x00, 0xd3);
/// The legend's name for [`POOL_COLOR`].
const POOL_COLOR_NAME: &str = "violet";
/// OPT's total line (`mrc --opt`): a dark orange no instance gets.
const OPT_COLOR: Rgb = Rgb(0xb3, 0x3c, 0x00);
/// The policy gap between LRU's total and OPT's: a light tint of [`OPT_COLOR`].
const GAP_COLOR: Rgb = Rgb(0xf6, 0xd9, 0xc4);
const TEXT_COLOR: Rgb = Rgb(0x22, 0x22, 0x22);
const MUTED_TEXT_COLOR: Rgb = Rgb(0x66, 0x66, 0x66);
const GRID_COLOR: Rgb = Rgb(0xe6, 0xe6, 0xe6);
const AXIS_COLOR: Rgb = Rgb(0x55, 0x55, 0x55);
const WHITE: Rgb = Rgb(0xff, 0xff, 0xff);

/// Longest instance id shown in the legend before it is shortened with an ellipsis.
const MAX_LEGEND_LABEL_CHARS: usize = 44;

/// An sRGB colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

/// One line of the plot.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotSeries {
    pub label: String,
    pub color: Rgb,
    /// `(capacity_gb, hit_rate_percent)` by increasing capacity.
    pub points: Vec<(f64, f64)>,
    /// The unlimited-capacity hit rate, in percent.
    pub ceiling_percent: f64,
    /// `(knee_percent, capacity_gb, hit_rate_percent)`.
    pub knees: Vec<(u32, f64, f64)>,
    /// The total line (or the pool's): drawn thicker.
    pub is_total: bool,
    /// The shared pool's line: its dots are at the total's knee capacities (what the pool
    /// hits where the instances' own caches reach their knees), so they take no labels.
    pub is_pool: bool,
    /// OPT's total line (`mrc --opt`): its knees take no labels (LRU's do).
    pub is_opt: bool,
}

/// Everything the plot shows, in data units.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotData {
    pub title: String,
    pub subtitle: String,
    pub series: Vec<PlotSeries>,
    /// Right end of the x axis (a tick value).
    pub x_max_gb: f64,
    pub x_step_gb: f64,
    /// Top of the y axis (a tick value), in percent.
    pub y_max_percent: f64,
    pub y_step_percent: f64,
    /// `mrc --opt`: `(capacity_gb, lru_percent, opt_percent)` of the totals at each sample,
    /// the policy gap shaded between them; empty without OPT.
    pub policy_gap: Vec<(f64, f64, f64)>,
    /// The x axis's label (the capacity of what: an instance's cache, a tenant's).
    pub x_label: String,
    /// `mrc --tenants --quota-total`: each tenant's quota on its curve; empty otherwise.
    pub quota_marks: Vec<QuotaMark>,
    /// The legend's line on the plan: the isolated, pooled and equal-split rates.
    pub quota_note: Option<String>,
}

/// A tenant's quota in the best split, marked on its curve (a ring, a dotted drop line to
/// the x axis), at the plan's exact hit rate there.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaMark {
    /// The tenant's curve's colour.
    pub color: Rgb,
    pub capacity_gb: f64,
    pub hit_rate_percent: f64,
}

/// `rings: quotas · isolated 41.2% · shared 43.0% · equal split 38.9%`.
fn quota_note(plan: &QuotaPlan) -> String {
    let percent = |rate: f64| display::percent(Some(rate), 2);
    let mut note = format!(
        "rings: the quotas (best split) · isolated {}",
        percent(plan.isolated_hit_rate)
    );
    if let Some(pooled) = plan.pooled_hit_rate {
        let _ = write!(note, " · one shared cache {}", percent(pooled));
    }
    let _ = write!(
        note,
        " · equal split {}",
        percent(plan.equal_split_hit_rate)
    );
    note
}

impl PlotData {
    /// Samples the exact curves once per horizontal pixel, up to a little past the largest
    /// saturation point; `source` names the input in the subtitle.
    #[must_use]
    pub fn from_curves(curves: &MrcCurves, report: &MrcReport, source: &str) -> Self {
        Self::build(curves, report, source, Lanes::Instances)
    }

    /// `mrc --tenants`: each lane but the pool is a tenant, drawn alone (its isolated LRU at
    /// each size; no total or pool line, whose x would be another size), and with `plan`
    /// (`--quota-total`) each tenant's quota marked on its curve, at the plan's exact hit rate.
    #[must_use]
    pub fn for_tenants(
        curves: &MrcCurves,
        report: &MrcReport,
        plan: Option<&QuotaPlan>,
        source: &str,
    ) -> Self {
        Self::build(curves, report, source, Lanes::Tenants(plan))
    }

    /// The figure, of instances or of tenants.
    fn build(curves: &MrcCurves, report: &MrcReport, source: &str, lanes: Lanes<'_>) -> Self {
        let plan = match lanes {
            Lanes::Instances => None,
            Lanes::Tenants(plan) => plan,
        };
        let saturation_bytes = report
            .instances
            .iter()
            .map(|i| i.saturation.capacity_bytes)
            .chain([report.total.saturation.capacity_bytes])
            .chain(
                plan.iter()
                    .flat_map(|p| p.tenants.iter().map(|t| t.quota_bytes)),
            )
            .max()
            .unwrap_or(0);
        let data_max_gb = bytes_to_gib(saturation_bytes) * 1.12;
        let (x_max_gb, x_step_gb) = nice_axis(if data_max_gb > 0.0 { data_max_gb } else { 1.0 }, 6);

        let sample_bytes = sample_capacities(x_max_gb);
        let samples = curves.sample_hit_rates(&sample_bytes);
        let (mut series, quota_marks) =
            instance_series(&samples.instances, report, &sample_bytes, plan);
        if lanes == Lanes::Instances {
            if curves.instances.len() > 1 {
                series.push(total_series(report, points(&sample_bytes, &samples.total)));
            }
            let pool_points = samples
                .pool
                .as_deref()
                .map(|rates| points(&sample_bytes, rates));
            if let Some(pool) = pool_series(report, pool_points) {
                series.push(pool);
            }
        }
        // Every drawn curve and ceiling fits under the axis (the pool's ceiling is above the
        // instances' when a shared cache hits what separate ones miss).
        let max_ceiling = series
            .iter()
            .map(|s| s.ceiling_percent)
            .chain(series.iter().flat_map(|s| s.points.iter().map(|&(_, p)| p)))
            .fold(0.0, f64::max);
        let (y_max_percent, y_step_percent) = if max_ceiling > 0.0 {
            let (max, step) = nice_axis((max_ceiling * 1.08).min(100.0), 5);
            (max.min(100.0), step)
        } else {
            (10.0, 2.0)
        };
        let instance_count = curves.instances.len();
        let (title, lane_name, x_label) = lanes.titles();
        Self {
            title,
            subtitle: format!(
                "{source} · {} requests, {instance_count} {lane_name}{} · {} · exact cumulative \
                 token hit rate",
                report.total.requests,
                if instance_count == 1 { "" } else { "s" },
                geometry(curves),
            ),
            x_label: x_label.to_owned(),
            series,
            x_max_gb,
            x_step_gb,
            y_max_percent,
            y_step_percent,
            policy_gap: Vec::new(),
            quota_marks,
            quota_note: plan.map(quota_note),
        }
    }

    /// Adds OPT's total line (`opt`: the curves of the OPT facts of the trace `lru` holds,
    /// `opt_report` their report) with its knees, and shades the policy gap between LRU's
    /// total and OPT's.
    pub fn add_opt(&mut self, lru: &MrcCurves, opt: &MrcCurves, opt_report: &MrcReport) {
        let sample_bytes = sample_capacities(self.x_max_gb);
        let lru_rates = lru.sample_hit_rates(&sample_bytes).total;
        let opt_rates = opt.sample_hit_rates(&sample_bytes).total;
        let opt_points = points(&sample_bytes, &opt_rates);
        self.policy_gap = points(&sample_bytes, &lru_rates)
            .into_iter()
            .zip(&opt_points)
            .map(|((gb, lru_percent), &(_, opt_percent))| (gb, lru_percent, opt_percent))
            .collect();
        self.series.push(PlotSeries {
            label: "OPT (Belady's optimal policy), total".into(),
            color: OPT_COLOR,
            points: opt_points,
            ceiling_percent: opt_report.total.infinite_hit_rate * 100.0,
            knees: total_knees(&opt_report.total),
            is_total: true,
            is_pool: false,
            is_opt: true,
        });
        self.title = "LRU and optimal (OPT) prefix-cache hit rate vs cache capacity".into();
    }
}

/// What the lanes of a plot are: instances (with the total and the pool beside them), or
/// tenants (`--tenants`), with the quota plan when there is one.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Lanes<'a> {
    Instances,
    Tenants(Option<&'a QuotaPlan>),
}

impl Lanes<'_> {
    /// The title, what a lane is called in the subtitle, and the x axis's label.
    fn titles(self) -> (String, &'static str, &'static str) {
        const TENANT_AXIS: &str = "cache capacity of each tenant (GiB = 2^30 bytes)";
        match self {
            Self::Instances => (
                "LRU prefix-cache hit rate vs cache capacity".to_owned(),
                "instance",
                "cache capacity per instance (GiB = 2^30 bytes)",
            ),
            Self::Tenants(None) => (
                "Each tenant's isolated LRU hit rate vs its cache".to_owned(),
                "tenant",
                TENANT_AXIS,
            ),
            Self::Tenants(Some(plan)) => (
                format!(
                    "Each tenant's isolated LRU hit rate and its quota of {}",
                    display::bytes(plan.quota_total_bytes, display::Precision::Significant(4))
                ),
                "tenant",
                TENANT_AXIS,
            ),
        }
    }
}

/// One line per instance (or tenant), and with `plan` each tenant's quota mark, its legend
/// label naming the quota.
fn instance_series(
    rates: &[Vec<f64>],
    report: &MrcReport,
    sample_bytes: &[u64],
    plan: Option<&QuotaPlan>,
) -> (Vec<PlotSeries>, Vec<QuotaMark>) {
    let mut quota_marks = Vec::new();
    let series = rates
        .iter()
        .zip(&report.instances)
        .enumerate()
        .map(|(index, (rates, instance))| {
            let color = PALETTE[index % PALETTE.len()];
            let quota = plan.and_then(|plan| {
                plan.tenants
                    .iter()
                    .find(|tenant| tenant.instance_id == instance.instance_id)
            });
            let label = match quota {
                Some(quota) => {
                    quota_marks.push(QuotaMark {
                        color,
                        capacity_gb: bytes_to_gib(quota.quota_bytes),
                        hit_rate_percent: quota.hit_rate * 100.0,
                    });
                    format!(
                        "{} · quota {}",
                        shorten(&instance.instance_id),
                        display::bytes(quota.quota_bytes, display::Precision::Significant(4))
                    )
                }
                None => shorten(&instance.instance_id),
            };
            PlotSeries {
                label,
                color,
                points: points(sample_bytes, rates),
                ceiling_percent: instance.infinite_hit_rate * 100.0,
                knees: instance
                    .knees
                    .iter()
                    .map(|k| (k.percent, k.point.capacity_gb, k.point.hit_rate * 100.0))
                    .collect(),
                is_total: false,
                is_pool: false,
                is_opt: false,
            }
        })
        .collect();
    (series, quota_marks)
}

/// The block geometry the capacities are in: `256 tokens/block · 32 MiB/block`, or a note
/// when the instances differ (the table gives each one's).
fn geometry(curves: &MrcCurves) -> String {
    let mut shapes = curves
        .instances
        .iter()
        .map(|curve| (curve.block_size_tokens, curve.block_bytes));
    let Some(first) = shapes.next() else {
        return "no blocks".to_owned();
    };
    if shapes.any(|shape| shape != first) {
        return "block geometry per instance: see the table".to_owned();
    }
    let (tokens, bytes) = first;
    format!(
        "{tokens} tokens/block · {}/block",
        display::bytes(bytes, display::Precision::Significant(3))
    )
}

/// `(capacity_gb, hit_rate_percent)` at each sampled size.
fn points(sample_bytes: &[u64], rates: &[f64]) -> Vec<(f64, f64)> {
    sample_bytes
        .iter()
        .zip(rates)
        .map(|(&bytes, &rate)| (bytes_to_gib(bytes), rate * 100.0))
        .collect()
}

/// The knees of a total line (LRU's or OPT's), as a series marks them: percent, GB, rate %.
fn total_knees(total: &litehit_report::TotalReport) -> Vec<(u32, f64, f64)> {
    total
        .knees
        .iter()
        .map(|k| (k.percent, k.point.capacity_gb, k.point.hit_rate * 100.0))
        .collect()
}

/// The total line: every instance with its own cache of each sampled size.
fn total_series(report: &MrcReport, points: Vec<(f64, f64)>) -> PlotSeries {
    PlotSeries {
        label: "total (each instance its own cache)".into(),
        color: TOTAL_COLOR,
        points,
        ceiling_percent: report.total.infinite_hit_rate * 100.0,
        knees: total_knees(&report.total),
        is_total: true,
        is_pool: false,
        is_opt: false,
    }
}

/// The shared pool lane at the same total capacity as the total line: at a per-instance size
/// C (the x axis), the pool of N × C (only when the pool and the instances share
/// `block_bytes`, as in a `replay --pool`: then `points` are there).
fn pool_series(report: &MrcReport, points: Option<Vec<(f64, f64)>>) -> Option<PlotSeries> {
    let pool_report = report.pool.as_ref()?;
    let comparison = pool_report.comparison.as_ref()?;
    Some(PlotSeries {
        label: shorten(&format!("{} (shared, N × C)", pool_report.instance_id)),
        color: POOL_COLOR,
        points: points?,
        ceiling_percent: pool_report.own.infinite_hit_rate * 100.0,
        knees: comparison
            .knees
            .iter()
            .map(|k| {
                (
                    k.percent,
                    k.point.per_instance_capacity_gb,
                    k.point.pool_hit_rate * 100.0,
                )
            })
            .collect(),
        is_total: true,
        is_pool: true,
        is_opt: false,
    })
}

/// One capacity (bytes) per horizontal pixel of the plot area, from 0 to `x_max_gb` (the one
/// curve sampler's spacing; every value read there is exact).
fn sample_capacities(x_max_gb: f64) -> Vec<u64> {
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "pixel count; a whole number of bytes"
    )]
    let (sample_count, x_max_bytes) = (
        (PLOT_RIGHT - PLOT_LEFT) as usize + 1,
        (x_max_gb * BYTES_PER_GIB as f64).floor() as u64,
    );
    evenly_spaced(x_max_bytes, sample_count).collect()
}

fn shorten(label: &str) -> String {
    display::fit(label, MAX_LEGEND_LABEL_CHARS)
}

/// A tick label: `step`'s decimals, no trailing zeros.
fn tick_label(value: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "small decimal count"
        )]
        let decimals = (-step.log10().floor()) as usize + 1;
        decimals
    };
    display::trim_zeros(&format!("{value:.decimals$}")).to_owned()
}

/// Horizontal anchoring of a text run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Anchor {
    Start,
    Middle,
    End,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct TextStyle {
    /// Em size in pixels (SVG `font-size`).
    size: f64,
    color: Rgb,
    anchor: Anchor,
    bold: bool,
    /// Rotated 90° counter-clockwise (reads bottom to top); the anchor is along the text.
    vertical: bool,
}

impl TextStyle {
    fn new(size: f64, color: Rgb, anchor: Anchor) -> Self {
        Self {
            size,
            color,
            anchor,
            bold: false,
            vertical: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Stroke {
    color: Rgb,
    width: f64,
    /// `[on, off]` lengths in pixels.
    dash: Option<[f64; 2]>,
}

/// Drawing primitives shared by the SVG and PNG backends (pixel coordinates, y down).
trait Canvas {
    fn rect(&mut self, x: f64, y: f64, width: f64, height: f64, fill: Rgb);
    fn polyline(&mut self, points: &[(f64, f64)], stroke: Stroke);
    fn circle(&mut self, center: (f64, f64), radius: f64, fill: Rgb, outline: Stroke);
    /// `at` is the anchor point on the baseline.
    fn text(&mut self, text: &str, at: (f64, f64), style: TextStyle);
}

/// `DejaVu` Sans 2.37 cut to the characters a plot can show (`assets/fonts/README.md` gives the
/// command that made it): printable ASCII, Latin-1 and Latin Extended-A (instance ids and file
/// names in most European languages), `…` and `∞`. Any other character, as any character
/// outside the full `DejaVu` Sans before, is drawn as the font's replacement box (`.notdef`).
const REGULAR_FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans-subset.ttf");
/// `DejaVu` Sans Bold 2.37 cut to printable ASCII: it only draws the fixed title.
const BOLD_FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans-Bold-subset.ttf");

/// The embedded fonts (`DejaVu` Sans regular and bold, subset).
struct Fonts {
    regular: FontRef<'static>,
    bold: FontRef<'static>,
}

impl Fonts {
    fn load() -> Self {
        Self {
            regular: FontRef::try_from_slice(REGULAR_FONT)
                .expect("the embedded DejaVu Sans font parses (tested)"),
            bold: FontRef::try_from_slice(BOLD_FONT)
                .expect("the embedded DejaVu Sans Bold font parses (tested)"),
        }
    }

    fn font(&self, bold: bool) -> &FontRef<'static> {
        if bold { &self.bold } else { &self.regular }
    }

    /// The `ab_glyph` scale (ascent − descent in pixels) for an em size in pixels.
    fn scale(&self, bold: bool, em_px: f64) -> PxScale {
        let font = self.font(bold);
        let units_per_em = font.units_per_em().unwrap_or(2048.0);
        #[expect(clippy::cast_possible_truncation, reason = "pixel sizes are small")]
        let em_px = em_px as f32;
        PxScale::from(em_px * font.height_unscaled() / units_per_em)
    }

    /// Advance width of `text` in pixels, with kerning.
    fn text_width(&self, text: &str, style: TextStyle) -> f64 {
        let font = self.font(style.bold);
        let scaled = font.as_scaled(self.scale(style.bold, style.size));
        let mut width = 0.0_f32;
        let mut previous = None;
        for ch in text.chars() {
            let id = scaled.glyph_id(ch);
            if let Some(previous) = previous {
                width += scaled.kern(previous, id);
            }
            width += scaled.h_advance(id);
            previous = Some(id);
        }
        f64::from(width)
    }
}

fn x_pixel(data: &PlotData, gb: f64) -> f64 {
    PLOT_LEFT + gb / data.x_max_gb * (PLOT_RIGHT - PLOT_LEFT)
}

fn y_pixel(data: &PlotData, percent: f64) -> f64 {
    PLOT_BOTTOM - percent.min(data.y_max_percent) / data.y_max_percent * (PLOT_BOTTOM - PLOT_TOP)
}

/// Ticks `0, step, …` up to `max` (inclusive, with float slack).
fn ticks(max: f64, step: f64) -> impl Iterator<Item = f64> {
    (0..)
        .map(move |i| f64::from(i) * step)
        .take_while(move |&v| v <= max + step * 1e-9)
}

/// Draws the whole figure.
fn draw(data: &PlotData, fonts: &Fonts, canvas: &mut impl Canvas) {
    let width = f64::from(PLOT_WIDTH);
    let height = f64::from(PLOT_HEIGHT);
    canvas.rect(0.0, 0.0, width, height, WHITE);

    draw_axes(data, canvas);

    // The policy gap: one pixel column per sample, from LRU's total up to OPT's.
    for &(gb, lru_percent, opt_percent) in &data.policy_gap {
        let (x, lru_y, opt_y) = (
            x_pixel(data, gb),
            y_pixel(data, lru_percent),
            y_pixel(data, opt_percent),
        );
        if lru_y > opt_y {
            canvas.rect(x - 0.5, opt_y, 1.0, lru_y - opt_y, GAP_COLOR);
        }
    }
    // Ceilings, curves, knees.
    for series in &data.series {
        let y = y_pixel(data, series.ceiling_percent);
        let ceiling = Stroke {
            color: series.color,
            width: 1.5,
            dash: Some([7.0, 5.0]),
        };
        canvas.polyline(&[(PLOT_LEFT, y), (PLOT_RIGHT, y)], ceiling);
    }
    for series in &data.series {
        let points: Vec<(f64, f64)> = series
            .points
            .iter()
            .map(|&(gb, percent)| (x_pixel(data, gb), y_pixel(data, percent)))
            .collect();
        let stroke = Stroke {
            color: series.color,
            width: if series.is_total { 3.0 } else { 2.25 },
            dash: None,
        };
        canvas.polyline(&points, stroke);
    }
    let knee_label_style = TextStyle::new(11.5, MUTED_TEXT_COLOR, Anchor::Start);
    // One series gets knee labels, so they never pile up: the total, or else the only
    // instance (the other lines' knees keep their dots; the table lists them all).
    let labelled = labelled_series(data);
    for (index, series) in data.series.iter().enumerate() {
        let outline = Stroke {
            color: WHITE,
            width: 1.5,
            dash: None,
        };
        for &(percent, gb, rate) in &series.knees {
            let center = (x_pixel(data, gb), y_pixel(data, rate));
            canvas.circle(center, 4.5, series.color, outline);
            if labelled == Some(index) {
                let label = format!("{percent}% of ∞ at {} GiB", display::significant_up(gb, 4));
                canvas.text(&label, (center.0 + 6.0, center.1 + 15.0), knee_label_style);
            }
        }
    }

    // Quotas: a dotted drop line to the x axis, then a ring over the curve.
    for mark in &data.quota_marks {
        let center = (
            x_pixel(data, mark.capacity_gb),
            y_pixel(data, mark.hit_rate_percent),
        );
        let drop = Stroke {
            color: mark.color,
            width: 1.5,
            dash: Some([2.0, 3.0]),
        };
        canvas.polyline(&[center, (center.0, PLOT_BOTTOM)], drop);
        let ring = Stroke {
            color: mark.color,
            width: QUOTA_RING_WIDTH,
            dash: None,
        };
        canvas.circle(center, QUOTA_RING_RADIUS, WHITE, ring);
    }

    draw_legend(data, fonts, canvas);
}

/// A quota's ring: larger than a knee's dot, hollow, so the two never read alike.
const QUOTA_RING_RADIUS: f64 = 7.0;
const QUOTA_RING_WIDTH: f64 = 3.0;

/// The one series whose knees are labelled: the total line when there is one, else the only
/// instance's (the pool's dots are at the total's knee capacities, which the labels name).
fn labelled_series(data: &PlotData) -> Option<usize> {
    data.series
        .iter()
        .position(|s| s.is_total && !s.is_pool && !s.is_opt)
        .or_else(|| {
            let mut instances = data
                .series
                .iter()
                .enumerate()
                .filter(|(_, s)| !s.is_total && !s.is_pool && !s.is_opt);
            match (instances.next(), instances.next()) {
                (Some((index, _)), None) => Some(index),
                _ => None,
            }
        })
}

/// Grid, ticks, frame, titles and axis labels.
fn draw_axes(data: &PlotData, canvas: &mut impl Canvas) {
    let width = f64::from(PLOT_WIDTH);
    let height = f64::from(PLOT_HEIGHT);
    // Grid and tick labels.
    let tick_style = TextStyle::new(13.0, MUTED_TEXT_COLOR, Anchor::Middle);
    for gb in ticks(data.x_max_gb, data.x_step_gb) {
        let x = x_pixel(data, gb).round();
        canvas.rect(x - 0.5, PLOT_TOP, 1.0, PLOT_BOTTOM - PLOT_TOP, GRID_COLOR);
        canvas.text(
            &tick_label(gb, data.x_step_gb),
            (x, PLOT_BOTTOM + 20.0),
            tick_style,
        );
    }
    for percent in ticks(data.y_max_percent, data.y_step_percent) {
        let y = y_pixel(data, percent).round();
        canvas.rect(PLOT_LEFT, y - 0.5, PLOT_RIGHT - PLOT_LEFT, 1.0, GRID_COLOR);
        let label = format!("{}%", tick_label(percent, data.y_step_percent));
        canvas.text(
            &label,
            (PLOT_LEFT - 8.0, y + 4.5),
            TextStyle::new(13.0, MUTED_TEXT_COLOR, Anchor::End),
        );
    }
    canvas.rect(
        PLOT_LEFT - 0.5,
        PLOT_TOP,
        1.0,
        PLOT_BOTTOM - PLOT_TOP + 0.5,
        AXIS_COLOR,
    );
    canvas.rect(
        PLOT_LEFT - 0.5,
        PLOT_BOTTOM - 0.5,
        PLOT_RIGHT - PLOT_LEFT + 0.5,
        1.0,
        AXIS_COLOR,
    );

    // Titles and axis labels.
    let mut title_style = TextStyle::new(21.0, TEXT_COLOR, Anchor::Middle);
    title_style.bold = true;
    canvas.text(&data.title, (width / 2.0, 34.0), title_style);
    canvas.text(
        &data.subtitle,
        (width / 2.0, 58.0),
        TextStyle::new(13.5, MUTED_TEXT_COLOR, Anchor::Middle),
    );
    let axis_style = TextStyle::new(15.0, TEXT_COLOR, Anchor::Middle);
    canvas.text(
        &data.x_label,
        (f64::midpoint(PLOT_LEFT, PLOT_RIGHT), height - 24.0),
        axis_style,
    );
    let mut y_axis_style = axis_style;
    y_axis_style.vertical = true;
    canvas.text(
        "cumulative token hit rate",
        (28.0, f64::midpoint(PLOT_TOP, PLOT_BOTTOM)),
        y_axis_style,
    );
}

/// Most curves the legend names; with more instances it names the total and the first
/// ones, and says how many it leaves out (the table and `--json` list every instance).
const MAX_LEGEND_SERIES: usize = 12;

/// Legend box in the lower right corner of the plot area (usually empty: curves rise fast
/// and then stay flat).
fn draw_legend(data: &PlotData, fonts: &Fonts, canvas: &mut impl Canvas) {
    let style = TextStyle::new(13.0, TEXT_COLOR, Anchor::Start);
    let note_style = TextStyle::new(12.0, MUTED_TEXT_COLOR, Anchor::Start);
    let label = |s: &PlotSeries| {
        let mut label = s.label.clone();
        let _ = write!(label, "   ∞ {:.2}%", s.ceiling_percent); // as in the table
        label
    };
    let named: Vec<&PlotSeries> = if data.series.len() > MAX_LEGEND_SERIES {
        // The total first, then as many instances as fit.
        let total = data.series.iter().filter(|s| s.is_total);
        let instances = data.series.iter().filter(|s| !s.is_total);
        total.chain(instances).take(MAX_LEGEND_SERIES - 1).collect()
    } else {
        data.series.iter().collect()
    };
    let mut lines: Vec<(Option<&PlotSeries>, String)> =
        named.iter().map(|&s| (Some(s), label(s))).collect();
    if named.len() < data.series.len() {
        lines.push((
            None,
            format!(
                "… and {} more instances (the table lists them all)",
                data.series.len() - named.len()
            ),
        ));
    }
    lines.push((
        None,
        "dashed: ∞-capacity ceiling · dots: 50/90/95/99% knees".into(),
    ));
    if let Some(note) = &data.quota_note {
        lines.push((None, note.clone()));
    }
    if !data.policy_gap.is_empty() {
        lines.push((
            None,
            "shaded: the policy gap, OPT's total hits that LRU's misses".into(),
        ));
    }
    if data.series.iter().any(|s| s.is_pool) {
        lines.push((
            None,
            format!(
                "{POOL_COLOR_NAME}: the shared pool (no instance is drawn in {POOL_COLOR_NAME})"
            ),
        ));
        lines.push((
            None,
            "the pool's dots: its hit rate at the total's knee capacities".into(),
        ));
    }
    let line_height = 20.0;
    let swatch = 26.0;
    let padding = 10.0;
    let text_width = lines
        .iter()
        .map(|(series, text)| {
            let width = fonts.text_width(text, if series.is_some() { style } else { note_style });
            if series.is_some() {
                width + swatch + 8.0
            } else {
                width
            }
        })
        .fold(0.0, f64::max);
    let box_width = text_width + 2.0 * padding;
    #[expect(clippy::cast_precision_loss, reason = "a handful of legend lines")]
    let box_height = lines.len() as f64 * line_height + 2.0 * padding - 4.0;
    let left = PLOT_RIGHT - box_width - 12.0;
    let top = PLOT_BOTTOM - box_height - 14.0;
    canvas.rect(
        left - 1.0,
        top - 1.0,
        box_width + 2.0,
        box_height + 2.0,
        GRID_COLOR,
    );
    canvas.rect(left, top, box_width, box_height, WHITE);
    for (index, (series, text)) in lines.iter().enumerate() {
        #[expect(clippy::cast_precision_loss, reason = "a handful of legend lines")]
        let baseline = top + padding + 12.0 + index as f64 * line_height;
        match series {
            Some(series) => {
                let y = baseline - 4.5;
                let stroke = Stroke {
                    color: series.color,
                    width: if series.is_total { 3.0 } else { 2.25 },
                    dash: None,
                };
                canvas.polyline(&[(left + padding, y), (left + padding + swatch, y)], stroke);
                canvas.text(text, (left + padding + swatch + 8.0, baseline), style);
            }
            None => canvas.text(text, (left + padding, baseline), note_style),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_axes() {
        assert_eq!(nice_axis(331.0, 6), (400.0, 100.0));
        assert_eq!(nice_axis(91.0, 5), (100.0, 20.0));
        let (max, step) = nice_axis(0.0034, 6);
        assert!(
            (max - 0.004).abs() < 1e-12 && (step - 0.001).abs() < 1e-12,
            "{max} {step}"
        );
        assert_eq!(nice_axis(12.0, 6), (12.0, 2.0));
    }

    #[test]
    fn tick_labels() {
        assert_eq!(tick_label(250.0, 50.0), "250");
        assert_eq!(tick_label(0.25, 0.05), "0.25");
        assert_eq!(tick_label(0.000_5, 0.000_1), "0.0005");
    }

    #[test]
    fn embedded_fonts_parse_and_measure() {
        let fonts = Fonts::load();
        let style = TextStyle::new(13.0, TEXT_COLOR, Anchor::Start);
        let width = fonts.text_width("capacity 1024 GiB", style);
        assert!((80.0..140.0).contains(&width), "{width}");
        assert!(fonts.text_width("∞", style) > 0.0);
    }

    /// `.notdef`, the replacement box, is glyph 0.
    fn has_glyph(font: &FontRef<'_>, ch: char) -> bool {
        font.glyph_id(ch).0 != 0
    }

    #[test]
    fn subset_fonts_cover_what_the_plot_draws() {
        let fonts = Fonts::load();
        let regular: Vec<char> = ('\u{20}'..='\u{7e}')
            .chain('\u{a0}'..='\u{17f}')
            .chain(['–', '…', '∞'])
            .collect();
        let missing: Vec<char> = regular
            .iter()
            .copied()
            .filter(|&ch| !has_glyph(&fonts.regular, ch))
            .collect();
        assert!(missing.is_empty(), "regular subset lacks {missing:?}");
        let missing_bold: Vec<char> = ('\u{20}'..='\u{7e}')
            .filter(|&ch| !has_glyph(&fonts.bold, ch))
            .collect();
        assert!(
            missing_bold.is_empty(),
            "bold subset lacks {missing_bold:?}"
        );
        // The fixed texts (the bold title; the legend's and subtitle's separators).
        let title = "LRU prefix-cache hit rate vs cache capacity";
        assert!(title.chars().all(|ch| has_glyph(&fonts.bold, ch)));
        for text in [
            "dashed: ∞-capacity ceiling · dots: 50/90/95/99% knees",
            "… and 3 more instances (the table lists them all)",
            "prefill-0   ∞ 37.19%",
            "12031 requests, 4 instances, exact cumulative token hit rate · café.csv",
        ] {
            assert!(
                text.chars().all(|ch| has_glyph(&fonts.regular, ch)),
                "{text}"
            );
        }
    }

    /// Every text a figure draws, with whether it is bold.
    #[derive(Default)]
    struct TextRecorder(Vec<(String, bool)>);

    impl Canvas for TextRecorder {
        fn rect(&mut self, _: f64, _: f64, _: f64, _: f64, _: Rgb) {}
        fn polyline(&mut self, _: &[(f64, f64)], _: Stroke) {}
        fn circle(&mut self, _: (f64, f64), _: f64, _: Rgb, _: Stroke) {}
        fn text(&mut self, text: &str, _: (f64, f64), style: TextStyle) {
            self.0.push((text.to_owned(), style.bold));
        }
    }

    /// A figure with every kind of line (instances, the total, the shared pool) and a
    /// subtitle naming an accounted span, as `mrc --from 1s --png` draws it.
    fn pooled_plot_with_a_span() -> PlotData {
        use litehit_core::facts::{FactRecord, RequestFact};
        use litehit_report::{MrcBuilder, PoolRule, SpanReport, TimeRange};
        let mut builder = MrcBuilder::new().with_pool(PoolRule::from_flag(None));
        for (instance, at, pairs) in [
            ("prefill-0", 1, &[[1_u64, 2_u64]][..]),
            ("prefill-1", 2, &[[2, 3]][..]),
            ("pool", 1, &[[1, 2]][..]),
            ("pool", 2, &[[1, 3]][..]),
        ] {
            let record = FactRecord {
                trace_id: "t".into(),
                instance_id: instance.into(),
                timestamp_ns: at,
                input_token_len: 64,
                block_size_tokens: 4,
                block_bytes: 1 << 20,
                fact: RequestFact::from_pairs(pairs),
            };
            builder.add_record(&record).unwrap();
        }
        let curves = builder.try_finish().unwrap();
        let report = curves.report(100);
        let range = TimeRange {
            from_ns: 1_500_000_000,
            to_ns: i64::MAX,
        };
        let span = SpanReport::new(range, 0).unwrap().describe();
        assert!(span.contains('–'), "{span}");
        PlotData::from_curves(&curves, &report, &format!("litehit_facts.csv · {span}"))
    }

    #[test]
    fn every_character_the_png_draws_is_in_the_embedded_fonts() {
        let fonts = Fonts::load();
        let data = pooled_plot_with_a_span();
        assert!(
            data.series.iter().any(|s| s.is_pool),
            "the pool's line is drawn"
        );
        let mut texts = TextRecorder::default();
        draw(&data, &fonts, &mut texts);
        assert!(texts.0.len() > 10, "{:?}", texts.0);
        for (text, bold) in &texts.0 {
            let font = if *bold { &fonts.bold } else { &fonts.regular };
            let missing: Vec<char> = text.chars().filter(|&ch| !has_glyph(font, ch)).collect();
            assert!(missing.is_empty(), "{text:?} draws {missing:?} as boxes");
        }
    }

    /// Issue #26: the plot says what a block is (tokens and bytes), and its knee labels say
    /// what they are a share of.
    #[test]
    fn the_subtitle_states_the_block_geometry_and_knees_say_of_infinity() {
        let data = pooled_plot_with_a_span();
        assert!(
            data.subtitle.starts_with("litehit_facts.csv · ")
                && data.subtitle.contains(" · 4 tokens/block · 1 MiB/block · "),
            "{}",
            data.subtitle
        );
        let mut texts = TextRecorder::default();
        draw(&data, &Fonts::load(), &mut texts);
        let knees: Vec<&str> = texts
            .0
            .iter()
            .map(|(text, _)| text.as_str())
            .filter(|text| text.contains("% of ∞ at "))
            .collect();
        assert_eq!(knees.len(), 4, "{:?}", texts.0);
    }

    #[test]
    fn characters_outside_the_subset_draw_the_replacement_box() {
        let fonts = Fonts::load();
        let style = TextStyle::new(13.0, TEXT_COLOR, Anchor::Start);
        for ch in ['日', 'к', 'α', '€'] {
            assert!(!has_glyph(&fonts.regular, ch), "{ch} is in the subset");
        }
        // The box has an outline and a width, so such an id still takes room in the legend.
        let notdef = fonts.regular.glyph_id('日');
        assert!(fonts.regular.outline(notdef).is_some());
        assert!(fonts.text_width("日本", style) > fonts.text_width("日", style));
    }
}
