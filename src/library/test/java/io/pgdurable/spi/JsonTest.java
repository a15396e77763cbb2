package io.pgdurable.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JsonTest {

    @Test
    void reads_every_json_type() {
        Map<String, Object> m = Json.parseObject(
                " {\"s\":\"a\\\"b\\\\c\\n\\u00e9\", \"i\":-42, \"f\":1.5e3, \"t\":true, \"n\":null, \"a\":[1,[]], \"o\":{}} ");
        assertEquals("a\"b\\c\né", m.get("s"));
        assertEquals(-42L, m.get("i"));
        assertEquals(new BigDecimal("1.5e3"), m.get("f"));
        assertEquals(Boolean.TRUE, m.get("t"));
        assertTrue(m.containsKey("n"));
        assertNull(m.get("n"));
        assertEquals(Arrays.asList(1L, List.of()), m.get("a"));
        assertEquals(Map.of(), m.get("o"));
    }

    @Test
    void writes_what_it_reads() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("text", "quote\" slash\\ ctl\u0001 nul\u0000 emoji😀");
        m.put("n", 9_007_199_254_740_993L);
        m.put("list", Arrays.asList("x", null, false));
        String json = Json.write(m);
        assertEquals(m, Json.parseObject(json));
        assertTrue(json.contains("\\u0000"), "NUL is escaped so PostgreSQL text can hold it: " + json);
    }

    @Test
    void rejects_malformed_input_naming_the_offset() {
        for (String bad : List.of("", "{", "{\"a\":}", "[1,]", "{'a':1}", "nul", "01x", "{\"a\":1} x", "\"\t\"",
                "{\"a\":\"\\x\"}")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Json.parse(bad), bad);
            assertTrue(e.getMessage().contains("offset"), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> Json.parseObject("[1]"));
        assertThrows(IllegalArgumentException.class, () -> Json.parse("[".repeat(10_000)));
    }
}
