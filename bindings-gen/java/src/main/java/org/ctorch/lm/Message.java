package org.ctorch.lm;

import java.util.List;

/** One turn of a conversation for a chat template. */
public record Message(String role, String content) {
    /** Refuses a null role or content. */
    public Message {
        if (role == null || content == null) {
            throw new IllegalArgumentException("Message: role and content may not be null");
        }
    }

    /** A "system" message. */
    public static Message system(String content) {
        return new Message("system", content);
    }

    /** A "user" message. */
    public static Message user(String content) {
        return new Message("user", content);
    }

    /** An "assistant" message. */
    public static Message assistant(String content) {
        return new Message("assistant", content);
    }

    /** The messages as the JSON array ctorch_lm_chat_apply takes. */
    static String json(List<Message> messages) {
        StringBuilder b = new StringBuilder("[");
        for (Message m : messages) {
            b.append(b.length() == 1 ? "{\"role\":" : ",{\"role\":");
            quote(m.role, b);
            b.append(",\"content\":");
            quote(m.content, b);
            b.append('}');
        }
        return b.append(']').toString();
    }

    /** JSON's string form of s: quotes, backslashes and control characters escaped. */
    static void quote(String s, StringBuilder b) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        b.append('"');
    }
}
