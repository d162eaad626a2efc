//! `--report FILE.html`: one self-contained page (no script, no network) with the command line,
//! the final table, and throughput and latency per second drawn as inline SVG by `plotters`.
//!
//! May import: nothing outside `tools/` (the area's rule: docs/architecture.md).

use plotters::prelude::*;

use super::stats::{Role, Summary};
use super::BenchError;

const SIZE: (u32, u32) = (960, 340);
const P50: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
const P99: RGBColor = RGBColor(0xd6, 0x27, 0x28);

type Series<'a> = (&'a str, RGBColor, Vec<(f64, f64)>);

/// The report page of `summary`, run as `command_line`.
pub fn html_report(summary: &Summary, command_line: &str) -> Result<String, BenchError> {
    let pts = &summary.points;
    let throughput = chart(
        "Throughput per second",
        "msgs/s",
        &[("msgs/s", P50, pts.iter().map(|p| (p.at_secs, p.msgs_per_sec)).collect())],
    )
    .map_err(BenchError::Chart)?;
    let latency_of = |f: fn(&super::Point) -> Option<f64>| -> Vec<(f64, f64)> {
        pts.iter().filter_map(|p| f(p).map(|v| (p.at_secs, v))).collect()
    };
    let (p50, p99) = (latency_of(|p| p.p50_ms), latency_of(|p| p.p99_ms));
    let what = match summary.role {
        Role::Produce => "Send latency per second (round trip)",
        Role::Consume => "Store-to-consume latency per second",
    };
    let latency = if p50.is_empty() {
        "<p>No latency recorded (oneway sends are not answered).</p>".to_owned()
    } else {
        chart(what, "ms", &[("p50", P50, p50), ("p99", P99, p99)]).map_err(BenchError::Chart)?
    };
    let title = match summary.role {
        Role::Produce => "ferrocket bench produce",
        Role::Consume => "ferrocket bench consume",
    };
    Ok(format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\n<style>\
         body{{font-family:sans-serif;margin:2em;color:#222}} pre{{background:#f4f4f4;padding:1em;overflow-x:auto}}\
         </style></head><body>\n<h1>{title}</h1>\n<h2>Command</h2>\n<pre>{}</pre>\n<h2>Result</h2>\n<pre>{}</pre>\n\
         <h2>Throughput</h2>\n{throughput}\n<h2>Latency</h2>\n{latency}\n</body></html>\n",
        escape(command_line),
        escape(&summary.table()),
    ))
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// One line chart as an SVG document; x is seconds from the start.
fn chart(title: &str, y_desc: &str, series: &[Series<'_>]) -> Result<String, String> {
    let all = series.iter().flat_map(|s| s.2.iter());
    let x_max = all.clone().map(|p| p.0).fold(1.0, f64::max);
    let y_max = all.map(|p| p.1).fold(0.0, f64::max).max(1e-3) * 1.1;
    let mut svg = String::new();
    {
        let err = |e: DrawingAreaErrorKind<<SVGBackend<'_> as DrawingBackend>::ErrorType>| e.to_string();
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut c = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..x_max, 0f64..y_max)
            .map_err(err)?;
        let decimals = if y_max >= 100.0 { 0 } else { 2 };
        c.configure_mesh()
            .x_desc("seconds")
            .y_desc(y_desc)
            .y_label_formatter(&|v| format!("{v:.decimals$}"))
            .draw()
            .map_err(err)?;
        for (name, color, points) in series {
            let color = *color;
            c.draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))
                .map_err(err)?
                .label(*name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        }
        c.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::super::stats::{Recorder, Timeline};
    use super::*;

    #[test]
    fn the_report_is_one_page_with_both_charts_and_no_network() {
        let r = Recorder::default();
        let mut t = Timeline::default();
        for at in 1..=3 {
            r.success(1000, 1024 * 1000, &[1000, 2000, 9000]);
            t.roll(&r, f64::from(at));
        }
        let page = html_report(&t.summary(Role::Produce, None), "ferrocket bench produce --topic <T>").unwrap();
        assert_eq!(page.matches("<svg").count(), 2, "{page}");
        assert!(page.contains("--topic &lt;T&gt;"));
        assert!(page.contains("msgs/s") && page.contains("p99"));
        // Nothing to fetch: the only URLs are the SVG namespace names.
        assert_eq!(page.matches("http").count(), page.matches("xmlns=\"http://www.w3.org/2000/svg\"").count());
        assert!(!page.contains("<script"));
    }

    #[test]
    fn oneway_report_says_there_is_no_latency() {
        let r = Recorder::default();
        let mut t = Timeline::default();
        r.success(1000, 1000, &[]);
        t.roll(&r, 1.0);
        let page = html_report(&t.summary(Role::Produce, None), "x").unwrap();
        assert_eq!(page.matches("<svg").count(), 1);
        assert!(page.contains("No latency recorded"));
    }
}
