//! `mrc --tenants --quota-total`: each tenant's curve with its quota marked on it. The plan in
//! `--json` is `query --quota-total`'s line; each tenant's curve points are `query`'s hits at
//! those capacities and a naive LRU's over the tenant's rows; and the SVG's rings sit at the
//! planned quotas and hit rates, read back through the plot's own axis ticks.

use std::path::Path;

use proptest::prelude::*;
use serde_json::Value;

use super::quota::{BLOCK_TOKENS, by_tenant, oracle_hits, replay_tenants};
use crate::common::cli_bin::{ok, run_in};
use crate::common::traces::prefix_tree_trace;

/// 2 MiB blocks of 4 tokens (512 KiB per token, a plausible KV size: no warning).
const BLOCK_BYTES: u64 = 2 << 20;
const BYTES_PER_GIB: f64 = (1_u64 << 30) as f64;

/// `litehit ARGS...`, which must succeed; its standard output.
fn litehit_ok(args: &[String]) -> String {
    ok(run_in(None, args)).stdout
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|arg| (*arg).to_owned()).collect()
}

/// An attribute's value in one SVG element's text.
fn attribute<'a>(element: &'a str, name: &str) -> Option<&'a str> {
    let start = element.find(&format!(" {name}=\""))? + name.len() + 3;
    let length = element[start..].find('"')?;
    Some(&element[start..start + length])
}

fn number(element: &str, name: &str) -> f64 {
    attribute(element, name)
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("{name} in {element}"))
}

/// Every element of `tag` in the SVG, with its text content (for `<text>`).
fn elements<'a>(svg: &'a str, tag: &str) -> Vec<(&'a str, &'a str)> {
    svg.lines()
        .filter(|line| line.starts_with(&format!("<{tag} ")))
        .map(|line| {
            let content = line
                .split_once('>')
                .map_or("", |(_, rest)| rest.split('<').next().unwrap_or(""));
            (line, content)
        })
        .collect()
}

/// The linear map from data to pixels that the ticks on one axis give: `(offset, scale)`
/// with pixel = offset + value × scale, from the first and last tick.
fn axis(ticks: &[(f64, f64)]) -> (f64, f64) {
    assert!(ticks.len() >= 2, "{ticks:?}");
    let (first, last) = (ticks[0], ticks[ticks.len() - 1]);
    let scale = (last.1 - first.1) / (last.0 - first.0);
    (first.1 - first.0 * scale, scale)
}

/// The plot's x (GiB) and y (percent) axes, from its tick labels: the x ticks are the
/// middle-anchored numbers under the plot, the y ticks the end-anchored `N%` on its left.
fn axes(svg: &str) -> ((f64, f64), (f64, f64)) {
    let texts = elements(svg, "text");
    let x_ticks: Vec<(f64, f64)> = texts
        .iter()
        .filter(|(element, _)| attribute(element, "font-size") == Some("13"))
        .filter(|(element, _)| attribute(element, "text-anchor") == Some("middle"))
        .filter_map(|(element, content)| {
            content
                .parse::<f64>()
                .ok()
                .map(|gb| (gb, number(element, "x")))
        })
        .collect();
    let y_ticks: Vec<(f64, f64)> = texts
        .iter()
        .filter(|(element, _)| attribute(element, "text-anchor") == Some("end"))
        .filter_map(|(element, content)| {
            let percent = content.strip_suffix('%')?.parse::<f64>().ok()?;
            // The label sits 4.5 px below its grid line (`draw_axes`).
            Some((percent, number(element, "y") - 4.5))
        })
        .collect();
    (axis(&x_ticks), axis(&y_ticks))
}

/// `mrc FACTS --tenants --quota-total ... --json` and `--svg`: the JSON and the SVG text.
fn mrc_tenants(dir: &Path, facts: &Path, quota: &[&str]) -> (Value, String) {
    let svg = dir.join("tenants.svg");
    let mut args = strings(&["mrc", &facts.display().to_string(), "--tenants", "--json"]);
    args.extend(strings(quota));
    args.extend(strings(&["--svg", &svg.display().to_string()]));
    let json: Value = serde_json::from_str(&litehit_ok(&args)).unwrap();
    (json, std::fs::read_to_string(&svg).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    /// The JSON's plan is `query --quota-total`'s; every tenant's curve point is `query`'s
    /// hits at its capacity and a naive LRU's over its rows; each ring of the SVG is at its
    /// tenant's quota (x) and planned hit rate (y), in its curve's colour; and the plot has
    /// no total or pool line.
    #[test]
    fn the_rings_are_at_the_planned_quotas_on_curves_equal_to_query(
        trace in prefix_tree_trace(),
        owners in prop::collection::vec(0..3_usize, 1..7),
        total_blocks in 1..9_usize,
    ) {
        let rows: Vec<(String, Vec<i64>)> = trace
            .into_iter()
            .enumerate()
            .map(|(index, keys)| (format!("t{}", owners[index % owners.len()]), keys))
            .collect();
        let tenants = by_tenant(&rows);
        prop_assume!(tenants.len() >= 2); // the pool is recognised beside two lanes or more
        let dir = tempfile::tempdir().unwrap();
        let facts = replay_tenants(dir.path(), &rows, BLOCK_BYTES);
        let total = format!("{total_blocks}b");
        let quota = ["--quota-total", total.as_str(), "--quota-step", "1b"];
        let (json, svg) = mrc_tenants(dir.path(), &facts, &quota);

        let mut query = strings(&["query", &facts.display().to_string(), "-"]);
        query.extend(strings(&quota));
        let line: Value = serde_json::from_str(&litehit_ok(&query)).unwrap();
        prop_assert_eq!(&json["quota"], &line);

        // Curve points against query and the naive LRU.
        let instances = json["instances"].as_array().unwrap();
        prop_assert_eq!(instances.len(), tenants.len());
        for ((name, requests), instance) in tenants.iter().zip(instances) {
            prop_assert_eq!(instance["instance_id"].as_str(), Some(name.as_str()));
            let points = instance["curve"]["points"].as_array().unwrap();
            let capacities: Vec<String> = points
                .iter()
                .map(|point| point["capacity_blocks"].as_u64().unwrap().to_string())
                .collect();
            let summaries = litehit_ok(&strings(&[
                "query",
                &facts.display().to_string(),
                "-",
                "--summary-only",
                "--capacity-blocks",
                &capacities.join(","),
            ]));
            let queried: Value = summaries
                .lines()
                .map(|line| serde_json::from_str::<Value>(line).unwrap())
                .find(|s| s["instance_id"].as_str() == Some(name.as_str()))
                .unwrap();
            for (slot, point) in points.iter().enumerate() {
                let capacity = usize::try_from(point["capacity_blocks"].as_u64().unwrap()).unwrap();
                let hit_tokens = point["hit_tokens"].as_u64().unwrap();
                prop_assert_eq!(Some(hit_tokens), queried["total_hit_tokens"][slot].as_u64());
                prop_assert_eq!(hit_tokens, oracle_hits(requests, capacity) * BLOCK_TOKENS);
            }
        }

        // The rings, in tenant order, at (quota GiB, hit rate %) through the axes' ticks.
        let ((x0, x_scale), (y0, y_scale)) = axes(&svg);
        let rings: Vec<&str> = elements(&svg, "circle")
            .into_iter()
            .map(|(element, _)| element)
            .filter(|element| attribute(element, "r") == Some("7"))
            .collect();
        let planned = line["tenants"].as_array().unwrap();
        prop_assert_eq!(rings.len(), planned.len(), "{}", svg);
        let strokes: Vec<&str> = elements(&svg, "polyline")
            .into_iter()
            .filter(|(element, _)| attribute(element, "stroke-width") == Some("2.25"))
            .filter_map(|(element, _)| attribute(element, "stroke"))
            .collect();
        for ((ring, tenant), (name, requests)) in rings.iter().zip(planned).zip(&tenants) {
            let quota_blocks = tenant["quota_blocks"].as_u64().unwrap();
            let hit_tokens = oracle_hits(requests, usize::try_from(quota_blocks).unwrap())
                * BLOCK_TOKENS;
            prop_assert_eq!(tenant["hit_tokens"].as_u64(), Some(hit_tokens), "{}", name);
            let input_tokens = tenant["input_tokens"].as_u64().unwrap();
            let gb = (quota_blocks * BLOCK_BYTES) as f64 / BYTES_PER_GIB;
            let percent = if input_tokens == 0 { 0.0 } else {
                100.0 * hit_tokens as f64 / input_tokens as f64
            };
            // SVG coordinates carry two decimals.
            let (x, y) = (number(ring, "cx"), number(ring, "cy"));
            prop_assert!((x - (x0 + gb * x_scale)).abs() < 0.01, "{} x {} for {} GiB", name, x, gb);
            prop_assert!((y - (y0 + percent * y_scale)).abs() < 0.01, "{} y {} for {}%", name, y, percent);
            // The ring is in its tenant's curve's colour.
            prop_assert!(strokes.contains(&attribute(ring, "stroke").unwrap()), "{}", ring);
        }
        prop_assert!(!svg.contains("total (each instance"), "no total line");
        prop_assert!(!svg.contains("(shared, N × C)"), "no pool line");
    }
}

/// Without `--quota-total`, `--tenants` draws the tenants' curves alone, unmarked; the
/// quota flags need `--tenants`.
#[test]
fn tenants_without_a_total_draw_unmarked_curves_and_quota_flags_need_tenants() {
    let rows: Vec<(String, Vec<i64>)> = (0..12)
        .map(|index| (format!("t{}", index % 3), vec![index % 4, 10 + index % 2]))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let facts = replay_tenants(dir.path(), &rows, BLOCK_BYTES);
    let (json, svg) = mrc_tenants(dir.path(), &facts, &[]);
    assert!(json.get("quota").is_none(), "{json}");
    assert!(!svg.contains(r#" r="7""#), "no ring without a plan");
    assert!(svg.contains("3 tenants") && svg.contains("cache capacity of each tenant"));
    assert!(!svg.contains("total (each instance"), "no total line");
    let facts = facts.display().to_string();
    let refused = run_in(None, ["mrc", &facts, "--quota-total", "4b"]);
    assert_eq!(refused.code, Some(1), "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("required arguments were not provided")
            && refused.stderr.contains("--tenants"),
        "{}",
        refused.stderr
    );
}
