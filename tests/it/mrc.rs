//! `litehit mrc`: its numbers equal `query`'s at the same capacities (knees, saturation and
//! random capacities), geometry checks, and the PNG/SVG plots are real images.

use std::fmt::Write as _;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use litehit::cli::mrc_args::MrcArgs;
use litehit::commands::mrc::run;
use litehit::output::query_jsonl::{QueryOptions, query_facts_files};
use litehit_core::facts::file::{FACTS_HEADER, append_fact_row};
use litehit_core::facts::{FactRow, RequestFact};
use litehit_report::{MrcCurves, MrcError, QuerySlots};

use crate::common::rng::Rng;

/// Three instances with different block geometries and canonical random curves.
fn synthetic_facts(path: &Path, rows: usize) {
    let instances = [
        ("engine-a", 16, 1_u64 << 20),
        ("engine-b", 32, 3 << 19),
        ("engine-c", 16, 5 << 18),
    ];
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut out = format!("{FACTS_HEADER}\n").into_bytes();
    for row in 0..rows {
        let (instance_id, block_size_tokens, block_bytes) = instances[row % instances.len()];
        let mut pairs = Vec::new();
        let mut start = 1 + rng.below(300);
        for _ in 0..rng.below(4) {
            let run = 1 + rng.below(40);
            pairs.push([start, run]);
            start += run + 1 + rng.below(200);
        }
        let hit_blocks: u64 = pairs.iter().map(|p| p[1]).sum();
        let fact = RequestFact::from_pairs(&pairs);
        let trace_id = format!("req-{row}");
        append_fact_row(
            &mut out,
            &FactRow {
                trace_id: &trace_id,
                instance_id,
                timestamp_ns: i64::try_from(row).unwrap(),
                input_token_len: (hit_blocks + rng.below(50)) * block_size_tokens
                    + rng.below(block_size_tokens),
                block_size_tokens,
                block_bytes,
                observed_cached_tokens: None,
                fact: &fact,
            },
        );
    }
    fs::write(path, out).unwrap();
}

#[test]
#[expect(
    clippy::float_cmp,
    reason = "mrc and query must agree exactly, not approximately"
)]
fn mrc_equals_query_at_knees_saturation_and_random_capacities() {
    let dir = tempfile::tempdir().unwrap();
    let facts = dir.path().join("facts.csv");
    synthetic_facts(&facts, 3000);
    let paths = vec![facts.clone()];
    let curves = MrcCurves::from_facts_files(&paths).unwrap();
    let report = curves.report(500);
    assert_eq!(report.instances.len(), 3);

    // Capacities to compare, as exact GB values (bytes / 2^30 is exact in f64).
    let mut capacity_bytes: Vec<u64> = Vec::new();
    for instance in &report.instances {
        capacity_bytes.extend(instance.knees.iter().map(|k| k.point.capacity_bytes));
        capacity_bytes.push(instance.saturation.capacity_bytes);
    }
    capacity_bytes.extend(report.total.knees.iter().map(|k| k.point.capacity_bytes));
    capacity_bytes.push(report.total.saturation.capacity_bytes);
    let mut rng = Rng(99);
    capacity_bytes.extend((0..10).map(|_| rng.below(report.total.saturation.capacity_bytes + 1)));
    let capacity_gb: Vec<f64> = capacity_bytes
        .iter()
        .map(|&b| b as f64 / f64::from(1u32 << 30))
        .collect();

    let slots = QuerySlots {
        capacity_gb: capacity_gb.clone(),
        capacity_blocks: Vec::new(),
    };
    let (_, summary) = query_facts_files(
        &paths,
        slots,
        QueryOptions { summary_only: true },
        Vec::new(),
    )
    .unwrap();

    for ((instance_id, totals), curve) in summary.per_instance.iter().zip(&curves.instances) {
        assert_eq!(instance_id, &curve.instance_id);
        assert_eq!(totals.requests, curve.requests);
        assert_eq!(totals.total_input_tokens, curve.total_input_tokens);
        for (slot, &bytes) in capacity_bytes.iter().enumerate() {
            assert_eq!(
                totals.total_hit_blocks[slot],
                curve.hit_blocks_at_bytes(bytes),
                "{instance_id} at {bytes} bytes"
            );
        }
    }
    for (slot, &bytes) in capacity_bytes.iter().enumerate() {
        assert_eq!(
            summary.overall.total_hit_tokens[slot],
            curves.total_hit_tokens_at_bytes(bytes)
        );
    }

    // The reported knee points themselves agree with the query's rates at their capacity.
    for (instance, (_, totals)) in report.instances.iter().zip(&summary.per_instance) {
        let rates = totals.hit_rates();
        for knee in &instance.knees {
            let slot = capacity_bytes
                .iter()
                .position(|&b| b == knee.point.capacity_bytes)
                .unwrap();
            assert_eq!(totals.total_hit_blocks[slot], knee.point.hit_blocks);
            assert_eq!(rates[slot], knee.point.hit_rate);
            assert!(knee.point.hit_rate >= knee.target_hit_rate);
            if knee.point.capacity_blocks > 0 {
                let below = curves_instance(&curves, &instance.instance_id)
                    .hits
                    .hit_blocks_at(knee.point.capacity_blocks - 1);
                let below_rate = (below * instance.block_size_tokens) as f64
                    / instance.total_input_tokens as f64;
                assert!(
                    below_rate < knee.target_hit_rate,
                    "knee is the smallest such capacity"
                );
            }
        }
    }
    let overall_rates = summary.overall.hit_rates();
    for knee in &report.total.knees {
        let slot = capacity_bytes
            .iter()
            .position(|&b| b == knee.point.capacity_bytes)
            .unwrap();
        assert_eq!(overall_rates[slot], knee.point.hit_rate);
        assert!(
            curves.total_hit_tokens_at_bytes(knee.point.capacity_bytes.saturating_sub(1))
                < knee.point.hit_tokens
                || knee.point.capacity_bytes == 0
        );
    }
}

fn curves_instance<'a>(
    curves: &'a MrcCurves,
    instance_id: &str,
) -> &'a litehit_report::InstanceCurve {
    curves
        .instances
        .iter()
        .find(|c| c.instance_id == instance_id)
        .unwrap()
}

#[test]
fn shards_aggregate_like_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole.csv");
    synthetic_facts(&whole, 600);
    let text = fs::read_to_string(&whole).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let (first, second) = lines[1..].split_at(250);
    let shard_a = dir.path().join("a.csv");
    let shard_b = dir.path().join("b.csv");
    fs::write(&shard_a, format!("{FACTS_HEADER}\n{}\n", first.join("\n"))).unwrap();
    fs::write(&shard_b, format!("{FACTS_HEADER}\n{}\n", second.join("\n"))).unwrap();
    let one = MrcCurves::from_facts_files(&[whole]).unwrap().report(100);
    let two = MrcCurves::from_facts_files(&[shard_a, shard_b])
        .unwrap()
        .report(100);
    assert_eq!(one, two);
}

#[test]
fn one_instance_with_two_block_geometries_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let facts = dir.path().join("mixed.csv");
    fs::write(
        &facts,
        format!("{FACTS_HEADER}\nr1,i1,1,8,4,1024,\"[]\"\nr2,i2,2,8,4,2048,\"[]\"\n\nr3,i1,3,8,4,2048,\"[]\"\n"),
    )
    .unwrap();
    let error = MrcCurves::from_facts_files(std::slice::from_ref(&facts)).unwrap_err();
    assert!(matches!(
        error,
        MrcError::MixedBlockGeometry { line: 5, .. }
    ));
    assert_eq!(
        error.to_string(),
        format!(
            "{}: facts line 5: instance \"i1\" mixes block geometry: expected block_size_tokens 4 \
             and block_bytes 1024 (as in its first row), found 4 and 2048",
            facts.display()
        )
    );
}

#[test]
fn a_facts_file_without_rows_is_an_error_not_an_empty_report() {
    let dir = tempfile::tempdir().unwrap();
    let facts = dir.path().join("empty.csv");
    fs::write(&facts, format!("{FACTS_HEADER}\n")).unwrap();
    let png = dir.path().join("plot.png");
    let error = run(&MrcArgs {
        facts: vec![facts],
        json: false,
        png: Some(png.clone()),
        svg: None,
        max_curve_points: 10,
        ..MrcArgs::default()
    })
    .unwrap_err();
    assert!(
        error
            .to_string()
            .ends_with("no facts rows, so there is no curve to draw"),
        "{error}"
    );
    assert!(!png.exists(), "no empty plot is written");
}

/// A decoded 8-bit RGB PNG.
struct Image {
    width: usize,
    height: usize,
    rgb: Vec<u8>,
}

/// Decodes the PNGs we write (RGB8, no interlace; filters None and Sub), checking CRCs.
fn decode_png(bytes: &[u8]) -> Image {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    let mut at = 8;
    let (mut width, mut height) = (0, 0);
    let mut idat = Vec::new();
    while at < bytes.len() {
        let length = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let kind = &bytes[at + 4..at + 8];
        let data = &bytes[at + 8..at + 8 + length];
        let crc = u32::from_be_bytes(bytes[at + 8 + length..at + 12 + length].try_into().unwrap());
        let mut expected = flate2::Crc::new();
        expected.update(kind);
        expected.update(data);
        assert_eq!(crc, expected.sum(), "chunk CRC");
        match kind {
            b"IHDR" => {
                width = u32::from_be_bytes(data[0..4].try_into().unwrap()) as usize;
                height = u32::from_be_bytes(data[4..8].try_into().unwrap()) as usize;
                assert_eq!(&data[8..], &[8, 2, 0, 0, 0], "RGB8, no interlace");
            }
            b"IDAT" => idat.extend_from_slice(data),
            _ => {}
        }
        at += 12 + length;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&idat[..])
        .read_to_end(&mut raw)
        .unwrap();
    assert_eq!(raw.len(), height * (width * 3 + 1));
    let mut rgb = Vec::with_capacity(width * height * 3);
    for row in raw.chunks_exact(width * 3 + 1) {
        let (filter, data) = (row[0], &row[1..]);
        let start = rgb.len();
        for (i, &byte) in data.iter().enumerate() {
            let left = if filter == 1 && i >= 3 {
                rgb[start + i - 3]
            } else {
                0
            };
            assert!(filter <= 1, "only None and Sub are used");
            rgb.push(byte.wrapping_add(left));
        }
    }
    Image { width, height, rgb }
}

/// Issue #26: the plot named the file (`litehit_facts.csv`), not what it is of: it names the
/// facts with their directory, or the trace `--title` names.
#[test]
fn the_plot_names_the_facts_directory_or_the_title_and_the_block_geometry() {
    let dir = tempfile::tempdir().unwrap();
    let facts = dir.path().join("run-0412/litehit_facts.csv");
    fs::create_dir_all(facts.parent().unwrap()).unwrap();
    synthetic_facts(&facts, 300);
    let svg = dir.path().join("mrc.svg");
    let draw = |title: Option<&str>| {
        run(&MrcArgs {
            facts: vec![facts.clone()],
            svg: Some(svg.clone()),
            title: title.map(str::to_owned),
            ..MrcArgs::default()
        })
        .unwrap();
        fs::read_to_string(&svg).unwrap()
    };
    let plot = draw(None);
    assert!(
        plot.contains(">facts: run-0412/litehit_facts.csv · "),
        "{plot}"
    );
    // Two instances of different blocks: the subtitle says so (the table gives each).
    assert!(
        plot.contains(" · block geometry per instance: see the table · "),
        "{plot}"
    );
    assert!(
        plot.contains("% of ∞ at "),
        "knee labels say of what: {plot}"
    );
    let plot = draw(Some("mooncake conversation, 1 h"));
    assert!(
        plot.contains(">trace: mooncake conversation, 1 h · "),
        "{plot}"
    );
}

#[test]
fn png_and_svg_plots_are_real_images() {
    let dir = tempfile::tempdir().unwrap();
    let facts = dir.path().join("facts.csv");
    synthetic_facts(&facts, 900);
    let png = dir.path().join("plot/mrc.png");
    fs::create_dir_all(png.parent().unwrap()).unwrap();
    let svg = dir.path().join("mrc.svg");
    run(&MrcArgs {
        facts: vec![facts],
        json: true,
        png: Some(png.clone()),
        svg: Some(svg.clone()),
        max_curve_points: 100,
        ..MrcArgs::default()
    })
    .unwrap();

    let image = decode_png(&fs::read(&png).unwrap());
    assert_eq!((image.width, image.height), (1200, 720));
    let pixels: Vec<[u8; 3]> = image
        .rgb
        .chunks_exact(3)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    let white = pixels.iter().filter(|p| **p == [255, 255, 255]).count();
    assert!(white > pixels.len() / 2, "mostly white background");
    assert!(white < pixels.len() * 99 / 100, "but not blank");
    let mut colours = pixels.clone();
    colours.sort_unstable();
    colours.dedup();
    assert!(
        colours.len() > 50,
        "anti-aliased lines and text: {} colours",
        colours.len()
    );
    for series_colour in [
        [0x4e, 0x79, 0xa7],
        [0xf2, 0x8e, 0x2b],
        [0xe1, 0x57, 0x59],
        [0x22, 0x22, 0x22],
    ] {
        let count = pixels.iter().filter(|p| **p == series_colour).count();
        assert!(
            count > 200,
            "series colour {series_colour:?} drawn ({count} pixels)"
        );
    }
    // Text is drawn: the title row band holds dark pixels.
    let title_dark = (20..40)
        .flat_map(|y| (0..image.width).map(move |x| (x, y)))
        .filter(|&(x, y)| pixels[y * image.width + x].iter().all(|&c| c < 100))
        .count();
    assert!(title_dark > 300, "title glyphs ({title_dark} dark pixels)");

    let svg = fs::read_to_string(&svg).unwrap();
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(svg.trim_end().ends_with("</svg>"));
    assert_eq!(
        svg.matches("<polyline").count(),
        4 + 4 + 4,
        "ceilings, curves, legend swatches"
    );
    assert!(svg.contains(">engine-b   ∞ "), "legend names instances");
    assert_eq!(svg.matches("<circle").count(), 4 * 4, "four knees per line");
    let leftovers: Vec<PathBuf> = fs::read_dir(dir.path().join("plot"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(leftovers, [png], "no temp file left");
}

#[test]
fn plots_of_cold_only_facts_do_not_fail() {
    let dir = tempfile::tempdir().unwrap();
    let facts = dir.path().join("cold.csv");
    fs::write(&facts, format!("{FACTS_HEADER}\nr1,i1,1,8,4,1024,\"[]\"\n")).unwrap();
    let png = dir.path().join("cold.png");
    run(&MrcArgs {
        facts: vec![facts],
        json: false,
        png: Some(png.clone()),
        svg: None,
        max_curve_points: 10,
        ..MrcArgs::default()
    })
    .unwrap();
    let image = decode_png(&fs::read(&png).unwrap());
    assert_eq!((image.width, image.height), (1200, 720));
}

#[test]
fn the_same_facts_file_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let facts = dir.path().join("f.csv");
    fs::write(&facts, format!("{FACTS_HEADER}\nr1,i1,1,8,4,1024,\"[]\"\n")).unwrap();
    let again = dir.path().join(".").join("f.csv");
    let error = run(&MrcArgs {
        facts: vec![facts, again],
        json: true,
        png: None,
        svg: None,
        max_curve_points: 10,
        ..MrcArgs::default()
    })
    .unwrap_err();
    assert!(error.to_string().contains("is given twice"), "{error}");
}

#[test]
fn a_plot_never_overwrites_an_input_or_the_other_plot() {
    let dir = tempfile::tempdir().unwrap();
    let facts = dir.path().join("f.csv");
    fs::write(&facts, format!("{FACTS_HEADER}\nr1,i1,1,8,4,1024,\"[]\"\n")).unwrap();
    let plot = dir.path().join("m.png");
    let args = |png: Option<PathBuf>, svg: Option<PathBuf>| MrcArgs {
        facts: vec![facts.clone()],
        json: true,
        png,
        svg,
        max_curve_points: 10,
        ..MrcArgs::default()
    };
    let error = run(&args(Some(plot.clone()), Some(plot.clone()))).unwrap_err();
    assert!(error.to_string().contains("the same file"), "{error}");
    let error = run(&args(Some(facts.clone()), None)).unwrap_err();
    assert!(
        error.to_string().contains("overwrite a facts file"),
        "{error}"
    );
    assert!(
        fs::read_to_string(&facts)
            .unwrap()
            .starts_with(FACTS_HEADER)
    );
}

#[test]
fn the_table_aligns_wide_characters_by_terminal_columns() {
    let dir = tempfile::tempdir().unwrap();
    let facts = dir.path().join("f.csv");
    fs::write(
        &facts,
        format!(
            "{FACTS_HEADER}\nr1,实例-东京-α,1,8,4,1024,\"[[1,2]]\"\nr2,i1,1,8,4,1024,\"[[1,2]]\"\n"
        ),
    )
    .unwrap();
    let report = MrcCurves::from_facts_files(&[facts]).unwrap().report(10);
    let table = litehit::output::mrc::render_table(&report);
    let rows: Vec<&str> = table.lines().take_while(|line| !line.is_empty()).collect();
    // Right-aligned to the last column: every row is as wide, in terminal columns.
    let starts: Vec<usize> = rows
        .iter()
        .map(|row| unicode_width::UnicodeWidthStr::width(*row))
        .collect();
    assert!(starts.iter().all(|&s| s == starts[0]), "{table}");
}

#[test]
fn a_legend_of_many_instances_names_the_total_and_counts_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let facts = dir.path().join("facts.csv");
    let mut text = format!("{FACTS_HEADER}\n");
    for instance in 0..30 {
        for request in 0..3 {
            let _ = writeln!(
                text,
                "r{request},node-{instance:02},{},64,16,1024,\"[[1,{}]]\"",
                request + 1,
                request + 1
            );
        }
    }
    fs::write(&facts, text).unwrap();
    let svg = dir.path().join("mrc.svg");
    run(&MrcArgs {
        facts: vec![facts],
        json: false,
        png: None,
        svg: Some(svg.clone()),
        max_curve_points: 100,
        ..MrcArgs::default()
    })
    .unwrap();
    let svg = fs::read_to_string(&svg).unwrap();
    let named = svg.matches("   ∞ ").count();
    assert_eq!(named, 11, "the total and ten instances");
    assert!(
        svg.contains(">total (each instance its own cache)   ∞ "),
        "the total is named"
    );
    assert!(svg.contains("… and 20 more instances"), "{svg}");
}

/// Issue #28: `mrc`'s total knee and `watch`'s sum of knees are two definitions; each has
/// its own name where the user reads it.
#[test]
fn the_total_knees_are_named_equal_share_knees_not_a_sum() {
    let dir = tempfile::tempdir().unwrap();
    let facts = dir.path().join("f.csv");
    fs::write(
        &facts,
        format!("{FACTS_HEADER}\nr1,a,1,8,4,1024,\"[[1,2]]\"\nr2,b,1,8,4,1024,\"[[1,2]]\"\n"),
    )
    .unwrap();
    let report = MrcCurves::from_facts_files(&[facts]).unwrap().report(10);
    let table = litehit::output::mrc::render_table(&report);
    assert!(
        table.contains("its knees are equal-share knees (the\nsmallest equal per-instance size whose total reaches p%), not the Σ of instance knees"),
        "{table}"
    );
}
