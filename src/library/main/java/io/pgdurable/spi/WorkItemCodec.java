package io.pgdurable.spi;

import io.pgdurable.spi.WorkItem.ActivityCompleted;
import io.pgdurable.spi.WorkItem.ActivityExecute;
import io.pgdurable.spi.WorkItem.ActivityFailed;
import io.pgdurable.spi.WorkItem.CancelInstance;
import io.pgdurable.spi.WorkItem.CarriedEvent;
import io.pgdurable.spi.WorkItem.ContinueAsNew;
import io.pgdurable.spi.WorkItem.ExternalRaised;
import io.pgdurable.spi.WorkItem.QueueMessage;
import io.pgdurable.spi.WorkItem.StartOrchestration;
import io.pgdurable.spi.WorkItem.SubOrchCompleted;
import io.pgdurable.spi.WorkItem.SubOrchFailed;
import io.pgdurable.spi.WorkItem.TimerFired;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The externally tagged JSON form of {@link WorkItem}. */
final class WorkItemCodec {
    private WorkItemCodec() {}

    static String encode(WorkItem item) {
        Map<String, Object> f = new LinkedHashMap<>();
        if (item instanceof StartOrchestration s) {
            f.put("instance", s.instance());
            f.put("orchestration", s.orchestration());
            f.put("input", s.input());
            putIfPresent(f, "version", s.version());
            putIfPresent(f, "parent_instance", s.parentInstance());
            putIfPresent(f, "parent_id", s.parentId());
            f.put("execution_id", s.executionId());
        } else if (item instanceof ContinueAsNew c) {
            f.put("instance", c.instance());
            f.put("orchestration", c.orchestration());
            f.put("input", c.input());
            putIfPresent(f, "version", c.version());
            List<Object> carried = new ArrayList<>();
            for (CarriedEvent e : c.carryForwardEvents()) {
                carried.add(List.of(e.name(), e.data()));
            }
            f.put("carry_forward_events", carried);
            putIfPresent(f, "initial_custom_status", c.initialCustomStatus());
        } else if (item instanceof ActivityExecute a) {
            f.put("instance", a.instance());
            f.put("execution_id", a.executionId());
            f.put("id", a.id());
            f.put("name", a.name());
            f.put("input", a.input());
            putIfPresent(f, "session_id", a.sessionId());
            putIfPresent(f, "tag", a.tag());
        } else if (item instanceof ActivityCompleted a) {
            f.put("instance", a.instance());
            f.put("execution_id", a.executionId());
            f.put("id", a.id());
            f.put("result", a.result());
        } else if (item instanceof ActivityFailed a) {
            f.put("instance", a.instance());
            f.put("execution_id", a.executionId());
            f.put("id", a.id());
            f.put("details", a.details());
        } else if (item instanceof TimerFired t) {
            f.put("instance", t.instance());
            f.put("execution_id", t.executionId());
            f.put("id", t.id());
            f.put("fire_at_ms", t.fireAtMs());
        } else if (item instanceof ExternalRaised e) {
            f.put("instance", e.instance());
            f.put("name", e.name());
            f.put("data", e.data());
        } else if (item instanceof QueueMessage q) {
            f.put("instance", q.instance());
            f.put("name", q.name());
            f.put("data", q.data());
        } else if (item instanceof SubOrchCompleted s) {
            f.put("parent_instance", s.parentInstance());
            f.put("parent_execution_id", s.parentExecutionId());
            f.put("parent_id", s.parentId());
            f.put("result", s.result());
        } else if (item instanceof SubOrchFailed s) {
            f.put("parent_instance", s.parentInstance());
            f.put("parent_execution_id", s.parentExecutionId());
            f.put("parent_id", s.parentId());
            f.put("details", s.details());
        } else if (item instanceof CancelInstance c) {
            f.put("instance", c.instance());
            f.put("reason", c.reason());
        } else {
            throw new IllegalArgumentException("unknown work item type " + item.getClass());
        }
        return Json.write(Map.of(item.kind(), f));
    }

    static WorkItem decode(String json) {
        Map<String, Object> outer = Json.parseObject(json);
        if (outer.size() != 1) {
            throw new IllegalArgumentException("a work item is a JSON object with exactly one variant key, got "
                    + outer.keySet());
        }
        Map.Entry<String, Object> only = outer.entrySet().iterator().next();
        if (!(only.getValue() instanceof Map)) {
            throw new IllegalArgumentException("work item variant " + only.getKey() + " must hold an object");
        }
        @SuppressWarnings("unchecked")
        Fields f = new Fields(only.getKey(), (Map<String, Object>) only.getValue());
        switch (only.getKey()) {
            case "StartOrchestration":
                return new StartOrchestration(f.str("instance"), f.str("orchestration"), f.str("input"),
                        f.optStr("version"), f.optStr("parent_instance"), f.optLong("parent_id"),
                        f.lng("execution_id", 1));
            case "ContinueAsNew": {
                List<CarriedEvent> carried = new ArrayList<>();
                Object list = f.fields.get("carry_forward_events");
                if (list instanceof List<?> items) {
                    for (Object pair : items) {
                        if (!(pair instanceof List<?> p) || p.size() != 2
                                || !(p.get(0) instanceof String) || !(p.get(1) instanceof String)) {
                            throw new IllegalArgumentException(
                                    "ContinueAsNew.carry_forward_events must be a list of [name, data] string pairs");
                        }
                        carried.add(new CarriedEvent((String) p.get(0), (String) p.get(1)));
                    }
                } else if (list != null) {
                    throw new IllegalArgumentException("ContinueAsNew.carry_forward_events must be a list");
                }
                return new ContinueAsNew(f.str("instance"), f.str("orchestration"), f.str("input"),
                        f.optStr("version"), carried, f.optStr("initial_custom_status"));
            }
            case "ActivityExecute":
                return new ActivityExecute(f.str("instance"), f.lng("execution_id"), f.lng("id"), f.str("name"),
                        f.str("input"), f.optStr("session_id"), f.optStr("tag"));
            case "ActivityCompleted":
                return new ActivityCompleted(f.str("instance"), f.lng("execution_id"), f.lng("id"), f.str("result"));
            case "ActivityFailed":
                return new ActivityFailed(f.str("instance"), f.lng("execution_id"), f.lng("id"), f.str("details"));
            case "TimerFired":
                return new TimerFired(f.str("instance"), f.lng("execution_id"), f.lng("id"), f.lng("fire_at_ms"));
            case "ExternalRaised":
                return new ExternalRaised(f.str("instance"), f.str("name"), f.str("data"));
            case "QueueMessage":
                return new QueueMessage(f.str("instance"), f.str("name"), f.str("data"));
            case "SubOrchCompleted":
                return new SubOrchCompleted(f.str("parent_instance"), f.lng("parent_execution_id"),
                        f.lng("parent_id"), f.str("result"));
            case "SubOrchFailed":
                return new SubOrchFailed(f.str("parent_instance"), f.lng("parent_execution_id"),
                        f.lng("parent_id"), f.str("details"));
            case "CancelInstance":
                return new CancelInstance(f.str("instance"), f.str("reason"));
            default:
                throw new IllegalArgumentException("unknown work item variant '" + only.getKey() + "'");
        }
    }

    private static void putIfPresent(Map<String, Object> f, String key, Object value) {
        if (value != null) {
            f.put(key, value);
        }
    }

    private record Fields(String variant, Map<String, Object> fields) {
        String str(String key) {
            Object v = fields.get(key);
            if (!(v instanceof String s)) {
                throw new IllegalArgumentException(variant + "." + key + " must be a string");
            }
            return s;
        }

        String optStr(String key) {
            Object v = fields.get(key);
            if (v == null) {
                return null;
            }
            if (!(v instanceof String s)) {
                throw new IllegalArgumentException(variant + "." + key + " must be a string or absent");
            }
            return s;
        }

        Long optLong(String key) {
            Object v = fields.get(key);
            if (v == null) {
                return null;
            }
            return lng(key);
        }

        long lng(String key) {
            Object v = fields.get(key);
            if (!(v instanceof Long l)) {
                throw new IllegalArgumentException(variant + "." + key + " must be an integer");
            }
            return l;
        }

        long lng(String key, long fallback) {
            return fields.get(key) == null ? fallback : lng(key);
        }
    }
}
