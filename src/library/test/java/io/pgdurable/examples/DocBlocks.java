package io.pgdurable.examples;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The fenced code blocks of a Markdown page, for the tests that run a page's examples. */
final class DocBlocks {
    private DocBlocks() {}

    /** The bodies of the page's blocks fenced as {@code language}, in page order. */
    static List<String> of(String page, String language) {
        Matcher m = Pattern.compile("(?ms)^```" + Pattern.quote(language) + "\\n(.*?)^```\\s*$").matcher(page);
        List<String> found = new ArrayList<>();
        while (m.find()) {
            found.add(m.group(1));
        }
        return found;
    }
}
