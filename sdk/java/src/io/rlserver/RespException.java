package io.rlserver;

/** An error reply from the server (-ERR, -WRONGTYPE, -MOVED ...). */
public class RespException extends RuntimeException {
    public RespException(String message) { super(message); }

    /** The error's first word, e.g. WRONGTYPE. */
    public String code() {
        String m = getMessage();
        int sp = m.indexOf(' ');
        return sp < 0 ? m : m.substring(0, sp);
    }
}
