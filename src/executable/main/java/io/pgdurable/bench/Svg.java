package io.pgdurable.bench;

import java.util.Locale;

/** The few SVG primitives the charts use, written by hand (no charting dependency). */
final class Svg {
    static final String SHORT_COLOR = "#d95f02";
    static final String LONG_COLOR = "#1b7f9e";
    static final String TARGET_COLOR = "#c0392b";
    static final String GRID = "#e3e3e3";
    static final String FONT = "font-family=\"Helvetica, Arial, sans-serif\"";

    private final StringBuilder sb = new StringBuilder();

    Svg(int width, int height) {
        sb.append("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"").append(width).append("\" height=\"")
                .append(height).append("\" viewBox=\"0 0 ").append(width).append(' ').append(height).append("\">\n");
        sb.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    }

    static String color(Mode mode) {
        return mode == Mode.SHORT ? SHORT_COLOR : LONG_COLOR;
    }

    Svg line(double x1, double y1, double x2, double y2, String stroke, double width, String dash) {
        sb.append(String.format(Locale.ROOT,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"%.1f\"%s/>\n",
                x1, y1, x2, y2, stroke, width, dash == null ? "" : " stroke-dasharray=\"" + dash + "\""));
        return this;
    }

    Svg rect(double x, double y, double w, double h, String fill) {
        sb.append(String.format(Locale.ROOT,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", x, y, Math.max(0, w),
                Math.max(0, h), fill));
        return this;
    }

    Svg circle(double x, double y, double r, String fill) {
        sb.append(String.format(Locale.ROOT, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\"/>\n", x, y, r,
                fill));
        return this;
    }

    Svg polyline(double[][] points, String stroke, double width, String dash) {
        if (points.length == 0) {
            return this;
        }
        sb.append("<polyline fill=\"none\" stroke=\"").append(stroke).append("\" stroke-width=\"")
                .append(String.format(Locale.ROOT, "%.1f", width)).append('"');
        if (dash != null) {
            sb.append(" stroke-dasharray=\"").append(dash).append('"');
        }
        sb.append(" points=\"");
        for (double[] p : points) {
            sb.append(String.format(Locale.ROOT, "%.1f,%.1f ", p[0], p[1]));
        }
        sb.append("\"/>\n");
        return this;
    }

    /** Text; {@code anchor} is start, middle or end; {@code rotate} turns it by -90° around its position. */
    Svg text(double x, double y, String text, int size, String anchor, String fill, boolean rotate) {
        sb.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" %s text-anchor=\"%s\" "
                        + "fill=\"%s\"%s>", x, y, size, FONT, anchor, fill,
                rotate ? String.format(Locale.ROOT, " transform=\"rotate(-90 %.1f %.1f)\"", x, y) : ""));
        sb.append(escape(text)).append("</text>\n");
        return this;
    }

    String end() {
        return sb + "</svg>\n";
    }

    static String escape(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }
}
