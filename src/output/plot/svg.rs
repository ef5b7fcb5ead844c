//! The SVG backend: plain SVG 1.1 text, fonts named (`DejaVu` Sans first, as in the PNG).

use std::fmt::Write as _;

use super::{
    Anchor, Canvas, Fonts, PLOT_HEIGHT, PLOT_WIDTH, PlotData, Rgb, Stroke, TextStyle, draw,
};

/// Renders the plot as an SVG document.
#[must_use]
pub fn render_svg(data: &PlotData) -> String {
    let mut canvas = SvgCanvas {
        out: String::with_capacity(256 * 1024),
    };
    let _ = writeln!(
        canvas.out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{PLOT_WIDTH}" height="{PLOT_HEIGHT}" viewBox="0 0 {PLOT_WIDTH} {PLOT_HEIGHT}" font-family="DejaVu Sans, Verdana, Arial, sans-serif">"#
    );
    let _ = writeln!(canvas.out, "<title>{}</title>", escape(&data.title));
    draw(data, &Fonts::load(), &mut canvas);
    canvas.out.push_str("</svg>\n");
    canvas.out
}

struct SvgCanvas {
    out: String,
}

impl std::fmt::Display for Rgb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }
}

/// Coordinates with two decimals at most (plenty for pixels, compact).
struct Coordinate(f64);

impl std::fmt::Display for Coordinate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = format!("{:.2}", self.0);
        let text = litehit_core::display::trim_zeros(&text);
        f.write_str(if text == "-0" { "0" } else { text })
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn stroke_attributes(stroke: Stroke) -> String {
    let mut attributes = format!(
        r#"fill="none" stroke="{}" stroke-width="{}" stroke-linejoin="round" stroke-linecap="round""#,
        stroke.color,
        Coordinate(stroke.width)
    );
    if let Some([on, off]) = stroke.dash {
        let _ = write!(
            attributes,
            r#" stroke-dasharray="{} {}""#,
            Coordinate(on),
            Coordinate(off)
        );
        attributes = attributes.replace(r#"stroke-linecap="round""#, r#"stroke-linecap="butt""#);
    }
    attributes
}

impl Canvas for SvgCanvas {
    fn rect(&mut self, x: f64, y: f64, width: f64, height: f64, fill: Rgb) {
        let _ = writeln!(
            self.out,
            r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{fill}"/>"#,
            Coordinate(x),
            Coordinate(y),
            Coordinate(width),
            Coordinate(height)
        );
    }

    fn polyline(&mut self, points: &[(f64, f64)], stroke: Stroke) {
        if points.is_empty() {
            return;
        }
        self.out.push_str("<polyline points=\"");
        for (index, &(x, y)) in points.iter().enumerate() {
            if index > 0 {
                self.out.push(' ');
            }
            let _ = write!(self.out, "{},{}", Coordinate(x), Coordinate(y));
        }
        let _ = writeln!(self.out, "\" {}/>", stroke_attributes(stroke));
    }

    fn circle(&mut self, center: (f64, f64), radius: f64, fill: Rgb, outline: Stroke) {
        let _ = writeln!(
            self.out,
            r#"<circle cx="{}" cy="{}" r="{}" fill="{fill}" stroke="{}" stroke-width="{}"/>"#,
            Coordinate(center.0),
            Coordinate(center.1),
            Coordinate(radius),
            outline.color,
            Coordinate(outline.width)
        );
    }

    fn text(&mut self, text: &str, at: (f64, f64), style: TextStyle) {
        let anchor = match style.anchor {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        };
        let weight = if style.bold {
            r#" font-weight="bold""#
        } else {
            ""
        };
        let rotation = if style.vertical {
            format!(
                r#" transform="rotate(-90 {} {})""#,
                Coordinate(at.0),
                Coordinate(at.1)
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            self.out,
            r#"<text x="{}" y="{}" font-size="{}" fill="{}" text-anchor="{anchor}" xml:space="preserve"{weight}{rotation}>{}</text>"#,
            Coordinate(at.0),
            Coordinate(at.1),
            Coordinate(style.size),
            style.color,
            escape(text)
        );
    }
}
