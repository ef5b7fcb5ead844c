//! The PNG backend: a small anti-aliasing rasterizer (coverage from the distance to each
//! segment or circle, box coverage for rectangles), glyphs through `ab_glyph`, and a PNG
//! encoder over `flate2` (zlib stream, CRC-32).

use std::io::Write as _;

use ab_glyph::{Font, ScaleFont, point};
use flate2::Crc;
use flate2::write::ZlibEncoder;

use super::{
    Anchor, Canvas, Fonts, PLOT_HEIGHT, PLOT_WIDTH, PlotData, Rgb, Stroke, TextStyle, draw,
};

/// Renders the plot as an RGB PNG file's bytes.
#[must_use]
pub fn render_png(data: &PlotData) -> Vec<u8> {
    let fonts = Fonts::load();
    let mut canvas = RasterCanvas::new(PLOT_WIDTH, PLOT_HEIGHT, &fonts);
    draw(data, &fonts, &mut canvas);
    encode_png(PLOT_WIDTH, PLOT_HEIGHT, &canvas.rgb)
}

struct RasterCanvas<'f> {
    width: usize,
    height: usize,
    /// Row-major RGB, 3 bytes per pixel.
    rgb: Vec<u8>,
    /// Per-pixel coverage of the polyline being drawn (max over its segments), so joints are
    /// not painted twice.
    coverage: Vec<f32>,
    fonts: &'f Fonts,
}

/// Pixel bounds `[x0, x1) × [y0, y1)`.
#[derive(Debug, Clone, Copy)]
struct PixelBox {
    x0: usize,
    y0: usize,
    x1: usize,
    y1: usize,
}

impl<'f> RasterCanvas<'f> {
    fn new(width: u32, height: u32, fonts: &'f Fonts) -> Self {
        let width = usize::try_from(width).expect("image width fits in usize");
        let height = usize::try_from(height).expect("image height fits in usize");
        Self {
            width,
            height,
            rgb: vec![0xff; width * height * 3],
            coverage: vec![0.0; width * height],
            fonts,
        }
    }

    /// Pixels touched by `[x0, x1] × [y0, y1]`, clipped to the image.
    fn pixel_box(&self, x0: f64, y0: f64, x1: f64, y1: f64) -> PixelBox {
        let clamp = |value: f64, limit: usize| -> usize {
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "clamped to the image"
            )]
            let pixel = value.max(0.0).min(limit as f64) as usize;
            pixel
        };
        PixelBox {
            x0: clamp(x0.floor(), self.width),
            y0: clamp(y0.floor(), self.height),
            x1: clamp(x1.ceil(), self.width),
            y1: clamp(y1.ceil(), self.height),
        }
    }

    fn blend(&mut self, x: usize, y: usize, color: Rgb, alpha: f32) {
        if x >= self.width || y >= self.height || alpha <= 0.0 {
            return;
        }
        let alpha = alpha.min(1.0);
        let index = (y * self.width + x) * 3;
        for (channel, target) in [color.0, color.1, color.2]
            .into_iter()
            .zip(&mut self.rgb[index..index + 3])
        {
            let current = f32::from(*target);
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "stays in 0..=255"
            )]
            let blended = (current + (f32::from(channel) - current) * alpha).round() as u8;
            *target = blended;
        }
    }

    /// Blends the accumulated coverage inside `area` in `color` and clears it.
    fn flush_coverage(&mut self, area: PixelBox, color: Rgb) {
        for y in area.y0..area.y1 {
            for x in area.x0..area.x1 {
                let index = y * self.width + x;
                let alpha = self.coverage[index];
                if alpha > 0.0 {
                    self.coverage[index] = 0.0;
                    self.blend(x, y, color, alpha);
                }
            }
        }
    }

    fn add_segment_coverage(&mut self, a: (f64, f64), b: (f64, f64), half_width: f64) -> PixelBox {
        let reach = half_width + 1.0;
        let area = self.pixel_box(
            a.0.min(b.0) - reach,
            a.1.min(b.1) - reach,
            a.0.max(b.0) + reach,
            a.1.max(b.1) + reach,
        );
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let length_squared = dx * dx + dy * dy;
        for y in area.y0..area.y1 {
            for x in area.x0..area.x1 {
                #[expect(clippy::cast_precision_loss, reason = "pixel coordinates are small")]
                let (px, py) = (x as f64 + 0.5, y as f64 + 0.5);
                let t = if length_squared > 0.0 {
                    (((px - a.0) * dx + (py - a.1) * dy) / length_squared).clamp(0.0, 1.0)
                } else {
                    0.0
                };
                let distance = (px - a.0 - t * dx).hypot(py - a.1 - t * dy);
                #[expect(clippy::cast_possible_truncation, reason = "coverage in 0..=1")]
                let coverage = (half_width + 0.5 - distance).clamp(0.0, 1.0) as f32;
                let cell = &mut self.coverage[y * self.width + x];
                *cell = cell.max(coverage);
            }
        }
        area
    }

    fn filled_circle(&mut self, center: (f64, f64), radius: f64, color: Rgb) {
        let area = self.pixel_box(
            center.0 - radius - 1.0,
            center.1 - radius - 1.0,
            center.0 + radius + 1.0,
            center.1 + radius + 1.0,
        );
        for y in area.y0..area.y1 {
            for x in area.x0..area.x1 {
                #[expect(clippy::cast_precision_loss, reason = "pixel coordinates are small")]
                let distance = (x as f64 + 0.5 - center.0).hypot(y as f64 + 0.5 - center.1);
                #[expect(clippy::cast_possible_truncation, reason = "coverage in 0..=1")]
                let coverage = (radius + 0.5 - distance).clamp(0.0, 1.0) as f32;
                self.blend(x, y, color, coverage);
            }
        }
    }
}

/// Splits a polyline into the "on" pieces of a dash pattern.
fn dash_segments(points: &[(f64, f64)], [on, off]: [f64; 2]) -> Vec<((f64, f64), (f64, f64))> {
    let mut segments = Vec::new();
    let mut drawing = true;
    let mut remaining = on;
    for pair in points.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let length = (b.0 - a.0).hypot(b.1 - a.1);
        if length <= 0.0 {
            continue;
        }
        let direction = ((b.0 - a.0) / length, (b.1 - a.1) / length);
        let at = |t: f64| (a.0 + direction.0 * t, a.1 + direction.1 * t);
        let mut t = 0.0;
        while t < length {
            let step = remaining.min(length - t);
            if drawing {
                segments.push((at(t), at(t + step)));
            }
            t += step;
            remaining -= step;
            if remaining <= 1e-9 {
                drawing = !drawing;
                remaining = if drawing { on } else { off };
            }
        }
    }
    segments
}

impl Canvas for RasterCanvas<'_> {
    fn rect(&mut self, x: f64, y: f64, width: f64, height: f64, fill: Rgb) {
        let (x1, y1) = (x + width, y + height);
        let area = self.pixel_box(x, y, x1, y1);
        for py in area.y0..area.y1 {
            #[expect(clippy::cast_precision_loss, reason = "pixel coordinates are small")]
            let cover_y = (y1.min(py as f64 + 1.0) - y.max(py as f64)).clamp(0.0, 1.0);
            for px in area.x0..area.x1 {
                #[expect(clippy::cast_precision_loss, reason = "pixel coordinates are small")]
                let cover_x = (x1.min(px as f64 + 1.0) - x.max(px as f64)).clamp(0.0, 1.0);
                #[expect(clippy::cast_possible_truncation, reason = "coverage in 0..=1")]
                let coverage = (cover_x * cover_y) as f32;
                self.blend(px, py, fill, coverage);
            }
        }
    }

    fn polyline(&mut self, points: &[(f64, f64)], stroke: Stroke) {
        let segments = match stroke.dash {
            Some(pattern) => dash_segments(points, pattern),
            None => points.windows(2).map(|pair| (pair[0], pair[1])).collect(),
        };
        let half_width = stroke.width / 2.0;
        let mut touched: Option<PixelBox> = None;
        for (a, b) in segments {
            let area = self.add_segment_coverage(a, b, half_width);
            touched = Some(match touched {
                None => area,
                Some(t) => PixelBox {
                    x0: t.x0.min(area.x0),
                    y0: t.y0.min(area.y0),
                    x1: t.x1.max(area.x1),
                    y1: t.y1.max(area.y1),
                },
            });
        }
        if let Some(area) = touched {
            self.flush_coverage(area, stroke.color);
        }
    }

    fn circle(&mut self, center: (f64, f64), radius: f64, fill: Rgb, outline: Stroke) {
        self.filled_circle(center, radius + outline.width / 2.0, outline.color);
        self.filled_circle(center, radius - outline.width / 2.0, fill);
    }

    fn text(&mut self, text: &str, at: (f64, f64), style: TextStyle) {
        let fonts = self.fonts;
        let font = fonts.font(style.bold);
        let scale = fonts.scale(style.bold, style.size);
        let scaled = font.as_scaled(scale);
        let width = fonts.text_width(text, style);
        let start = match style.anchor {
            Anchor::Start => 0.0,
            Anchor::Middle => -width / 2.0,
            Anchor::End => -width,
        };
        // Glyphs are laid out relative to the anchor on the baseline, then placed upright or
        // rotated 90° counter-clockwise: offset (along, down) ↦ (down, −along).
        #[expect(
            clippy::cast_possible_truncation,
            reason = "pixel coordinates are small"
        )]
        let (anchor_x, anchor_y) = (at.0.round() as i64, at.1.round() as i64);
        #[expect(clippy::cast_possible_truncation, reason = "pixel offsets are small")]
        let mut caret = start as f32;
        let mut previous = None;
        for ch in text.chars() {
            let id = scaled.glyph_id(ch);
            if let Some(previous) = previous {
                caret += scaled.kern(previous, id);
            }
            let glyph = id.with_scale_and_position(scale, point(caret, 0.0));
            caret += scaled.h_advance(id);
            previous = Some(id);
            let Some(outlined) = font.outline_glyph(glyph) else {
                continue;
            };
            let bounds = outlined.px_bounds();
            #[expect(
                clippy::cast_possible_truncation,
                reason = "glyph bounds are whole pixels"
            )]
            let (left, top) = (bounds.min.x as i64, bounds.min.y as i64);
            outlined.draw(|gx, gy, coverage| {
                let (along, down) = (left + i64::from(gx), top + i64::from(gy));
                let (x, y) = if style.vertical {
                    (anchor_x + down, anchor_y - along - 1)
                } else {
                    (anchor_x + along, anchor_y + down)
                };
                if let (Ok(x), Ok(y)) = (usize::try_from(x), usize::try_from(y)) {
                    self.blend(x, y, style.color, coverage);
                }
            });
        }
    }
}

/// Encodes 8-bit RGB pixels as a PNG (filter "Sub" on every row, zlib default level).
fn encode_png(width: u32, height: u32, rgb: &[u8]) -> Vec<u8> {
    let row_bytes = rgb.len() / usize::try_from(height.max(1)).expect("height fits in usize");
    let mut filtered = Vec::with_capacity(rgb.len() + rgb.len() / row_bytes.max(1));
    for row in rgb.chunks_exact(row_bytes.max(1)) {
        filtered.push(1); // Sub: each byte minus the same channel of the pixel to its left.
        for (index, &byte) in row.iter().enumerate() {
            let left = if index >= 3 { row[index - 3] } else { 0 };
            filtered.push(byte.wrapping_sub(left));
        }
    }
    let mut encoder = ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    encoder
        .write_all(&filtered)
        .expect("writing to a Vec cannot fail");
    let compressed = encoder.finish().expect("writing to a Vec cannot fail");

    let mut png = Vec::with_capacity(compressed.len() + 64);
    png.extend_from_slice(b"\x89PNG\r\n\x1a\n");
    let mut header = Vec::with_capacity(13);
    header.extend_from_slice(&width.to_be_bytes());
    header.extend_from_slice(&height.to_be_bytes());
    header.extend_from_slice(&[8, 2, 0, 0, 0]); // 8-bit, truecolour, deflate, adaptive filters, no interlace
    append_chunk(&mut png, b"IHDR", &header);
    append_chunk(&mut png, b"IDAT", &compressed);
    append_chunk(&mut png, b"IEND", &[]);
    png
}

fn append_chunk(png: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    let length = u32::try_from(data.len()).expect("a PNG chunk is below 4 GiB");
    png.extend_from_slice(&length.to_be_bytes());
    png.extend_from_slice(kind);
    png.extend_from_slice(data);
    let mut crc = Crc::new();
    crc.update(kind);
    crc.update(data);
    png.extend_from_slice(&crc.sum().to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_crc_matches_known_iend() {
        let mut png = Vec::new();
        append_chunk(&mut png, b"IEND", &[]);
        assert_eq!(
            png,
            [0, 0, 0, 0, b'I', b'E', b'N', b'D', 0xae, 0x42, 0x60, 0x82]
        );
    }

    #[test]
    fn dashes_alternate() {
        let segments = dash_segments(&[(0.0, 0.0), (10.0, 0.0), (20.0, 0.0)], [3.0, 2.0]);
        let starts: Vec<f64> = segments.iter().map(|s| s.0.0).collect();
        assert_eq!(starts, [0.0, 5.0, 10.0, 15.0]);
        assert!(segments.iter().all(|s| (s.1.0 - s.0.0 - 3.0).abs() < 1e-9));
    }
}
