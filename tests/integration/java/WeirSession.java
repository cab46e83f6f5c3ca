import java.sql.*;
import java.util.Properties;

/** pgjdbc's startup and session checks (tests/integration/test_session_details.py): run
 *  against weir and against PostgreSQL, it prints what it saw, one key=value per line. */
public class WeirSession {
    static void out(String s) { System.out.println(s); }

    static String one(Statement s, String sql) throws SQLException {
        try (ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        }
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.setProperty("user", args[1]);
        props.setProperty("prepareThreshold", "1");
        try (Connection c = DriverManager.getConnection(args[0], props)) {
            DatabaseMetaData md = c.getMetaData();
            out("major=" + md.getDatabaseMajorVersion());
            out("valid=" + c.isValid(5));  // pgjdbc's validation: an empty query
            try (Statement s = c.createStatement()) {
                out("select1=" + one(s, "SELECT 1"));  // the validation query pools configure
                out("scs=" + one(s, "SHOW standard_conforming_strings"));
                // with standard_conforming_strings on, pgjdbc leaves a backslash in '...' alone
                out("backslash=" + one(s, "SELECT 'a\\b'") + "|" + one(s, "SELECT E'a\\\\b'"));
                out("versionnum=" + (Integer.parseInt(one(s, "SELECT current_setting('server_version_num')")) >= 150000));
                out("set_config=" + one(s, "SELECT set_config('application_name', 'jdbc-session', false)"));
                out("application_name=" + one(s, "SHOW application_name"));
            }
            // SHOW TRANSACTION ISOLATION LEVEL, then SET SESSION CHARACTERISTICS AS TRANSACTION ...
            out("isolation=" + c.getTransactionIsolation());
            c.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE);
            out("isolation_after=" + c.getTransactionIsolation());
            try (PreparedStatement ps = c.prepareStatement("SELECT current_setting(?)")) {
                ps.setString(1, "standard_conforming_strings");
                for (int i = 0; i < 3; i++) {
                    try (ResultSet rs = ps.executeQuery()) { rs.next(); out("prepared=" + rs.getString(1)); }
                }
            }
            try (Statement s = c.createStatement()) {
                s.executeQuery("SELECT current_setting('no_such_setting')");
                out("no error?");
            } catch (SQLException e) {
                out("unknown=" + e.getSQLState());
            }
            try (Statement s = c.createStatement()) {
                s.execute("DISCARD ALL");
                out("after_discard=" + one(s, "SHOW application_name") + "|" + one(s, "SELECT 1"));
            }
            out("valid_end=" + c.isValid(5));
        }
        out("done");
    }
}
