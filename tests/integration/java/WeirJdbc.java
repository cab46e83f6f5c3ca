import java.math.BigDecimal;
import java.sql.*;
import java.util.Properties;

public class WeirJdbc {
    static void out(String s) { System.out.println(s); }

    public static void main(String[] args) throws Exception {
        String url = args[0];
        String table = args[1];
        Properties props = new Properties();
        props.setProperty("user", "materialize");
        props.setProperty("ApplicationName", "weir-jdbc-test");
        props.setProperty("prepareThreshold", "1");  // server-side named statements from the first use
        try (Connection c = DriverManager.getConnection(url, props)) {
            DatabaseMetaData md = c.getMetaData();
            out("product=" + md.getDatabaseProductName() + " " + md.getDatabaseMajorVersion());
            try (Statement s = c.createStatement()) {
                try (ResultSet rs = s.executeQuery("SHOW application_name")) {
                    rs.next();
                    out("application_name=" + rs.getString(1));
                }
                try (ResultSet rs = s.executeQuery("SHOW extra_float_digits")) {
                    rs.next();
                    out("extra_float_digits=" + rs.getString(1));
                }
                s.execute("CREATE TABLE " + table + " (id int, name text, score double precision, ok boolean, "
                        + "ts timestamp, n numeric(10,2), big bigint)");
            }
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + table + " VALUES (?, ?, ?, ?, ?, ?, ?)")) {
                for (int i = 1; i <= 5; i++) {
                    ps.setInt(1, i);
                    ps.setString(2, "name " + i);
                    if (i == 3) ps.setNull(3, Types.DOUBLE); else ps.setDouble(3, i * 1.25);
                    ps.setBoolean(4, i % 2 == 1);
                    ps.setTimestamp(5, Timestamp.valueOf("2024-01-0" + i + " 10:20:30.123456"));
                    ps.setBigDecimal(6, new BigDecimal("1234.5").add(BigDecimal.valueOf(i)));
                    ps.setLong(7, 10000000000L * i);
                    out("inserted=" + ps.executeUpdate());
                }
            }
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + table + " (id, name) VALUES (?, ?)")) {
                ps.setInt(1, 10); ps.setString(2, "batch a"); ps.addBatch();
                ps.setInt(1, 11); ps.setString(2, "batch b"); ps.addBatch();
                int[] counts = ps.executeBatch();
                out("batch=" + counts.length + "," + counts[0] + "," + counts[1]);
            }
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT id, name, score, ok, ts, n, big FROM " + table + " WHERE id <= ? ORDER BY id")) {
                for (int round = 0; round < 3; round++) {  // re-executions reuse the named statement
                    ps.setInt(1, 5);
                    try (ResultSet rs = ps.executeQuery()) {
                        ResultSetMetaData m = rs.getMetaData();
                        if (round == 0) {
                            StringBuilder sb = new StringBuilder("columns=");
                            for (int k = 1; k <= m.getColumnCount(); k++) {
                                sb.append(m.getColumnName(k)).append(':').append(m.getColumnTypeName(k)).append(' ');
                            }
                            out(sb.toString().trim());
                        }
                        int rows = 0;
                        while (rs.next()) {
                            rows++;
                            if (round > 0) continue;
                            double score = rs.getDouble("score");
                            String scoreText = rs.wasNull() ? "NULL" : Double.toString(score);
                            out("row=" + rs.getInt("id") + "|" + rs.getString("name") + "|" + scoreText + "|"
                                    + rs.getBoolean("ok") + "|" + rs.getTimestamp("ts") + "|"
                                    + rs.getBigDecimal("n") + "|" + rs.getLong("big"));
                        }
                        out("round=" + round + " rows=" + rows);
                    }
                }
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + table + " WHERE name LIKE ?")) {
                ps.setString(1, "batch%");
                try (ResultSet rs = ps.executeQuery()) { rs.next(); out("like=" + rs.getLong(1)); }
            }
            try (Statement s = c.createStatement()) {
                s.executeQuery("SELECT 1/0");
                out("no error?");
            } catch (SQLException e) {
                out("error=" + e.getSQLState() + " " + e.getMessage().split("\n")[0]);
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT * FROM " + table + "_nope WHERE id = ?")) {
                ps.setInt(1, 1);
                ps.executeQuery();
                out("no error?");
            } catch (SQLException e) {
                out("error=" + e.getSQLState());
            }
            // transactions: autocommit off, rollback and commit
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.executeUpdate("INSERT INTO " + table + " (id) VALUES (100)");
                c.rollback();
                s.executeUpdate("INSERT INTO " + table + " (id) VALUES (101)");
                c.commit();
                try (ResultSet rs = s.executeQuery("SELECT count(*) FROM " + table + " WHERE id >= 100")) {
                    rs.next(); out("tx=" + rs.getLong(1));
                }
                c.commit();
                try {
                    s.executeQuery("SELECT 1/0");
                } catch (SQLException e) {
                    out("txerror=" + e.getSQLState());
                }
                try {
                    s.executeQuery("SELECT 1");
                } catch (SQLException e) {
                    out("aborted=" + e.getSQLState());
                }
                c.rollback();
            }
            c.setAutoCommit(true);
            // fetch size inside a transaction: portal row limits + PortalSuspended
            c.setAutoCommit(false);
            try (PreparedStatement ps = c.prepareStatement("SELECT id FROM " + table + " ORDER BY id")) {
                ps.setFetchSize(2);
                try (ResultSet rs = ps.executeQuery()) {
                    StringBuilder sb = new StringBuilder("fetched=");
                    while (rs.next()) sb.append(rs.getInt(1)).append(',');
                    out(sb.toString());
                }
            }
            c.commit();
            c.setAutoCommit(true);
        }
        out("done");
    }
}
