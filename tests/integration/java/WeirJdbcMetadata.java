import java.sql.*;
import java.util.Properties;

/**
 * Prints what pgjdbc's DatabaseMetaData answers (what DBeaver and DataGrip call) for one
 * schema and table, every column of every result set, in a stable text form:
 *
 *   == call(arguments)
 *   columns=LABEL:type|LABEL:type|...
 *   row=value|value|...        (NULL for SQL NULL; '|' and '\' in values escaped with '\')
 *   error=SQLSTATE message     (instead of columns / rows, when the call failed)
 *
 * Arguments: jdbc-url user schema table. The same program runs against weir and PostgreSQL,
 * whose outputs tests/integration/test_pgjdbc_metadata.py compares.
 */
public class WeirJdbcMetadata {
    interface Call { ResultSet run(DatabaseMetaData md) throws SQLException; }

    static void out(String s) { System.out.println(s); }

    static String text(String v) {
        return v == null ? "NULL" : v.replace("\\", "\\\\").replace("|", "\\|").replace("\n", "\\n");
    }

    static void dump(DatabaseMetaData md, String title, Call call) {
        out("== " + title);
        try (ResultSet rs = call.run(md)) {
            ResultSetMetaData m = rs.getMetaData();
            StringBuilder sb = new StringBuilder("columns=");
            for (int k = 1; k <= m.getColumnCount(); k++) {
                if (k > 1) sb.append('|');
                sb.append(m.getColumnLabel(k)).append(':').append(m.getColumnTypeName(k));
            }
            out(sb.toString());
            while (rs.next()) {
                sb = new StringBuilder("row=");
                for (int k = 1; k <= m.getColumnCount(); k++) {
                    if (k > 1) sb.append('|');
                    sb.append(text(rs.getString(k)));
                }
                out(sb.toString());
            }
        } catch (SQLException e) {
            String msg = e.getMessage() == null ? "" : e.getMessage().split("\n")[0];
            out("error=" + e.getSQLState() + " " + msg);
        }
    }

    public static void main(String[] args) throws Exception {
        String url = args[0], user = args[1], schema = args[2], table = args[3];
        Properties props = new Properties();
        props.setProperty("user", user);
        props.setProperty("ApplicationName", "weir-jdbc-metadata-test");
        try (Connection c = DriverManager.getConnection(url, props)) {
            DatabaseMetaData md = c.getMetaData();
            out("product=" + md.getDatabaseProductName() + " " + md.getDatabaseMajorVersion());
            dump(md, "getCatalogs()", DatabaseMetaData::getCatalogs);
            dump(md, "getSchemas(null, " + schema + ")", d -> d.getSchemas(null, schema));
            dump(md, "getSchemas()", DatabaseMetaData::getSchemas);
            dump(md, "getTableTypes()", DatabaseMetaData::getTableTypes);
            dump(md, "getTables(null, " + schema + ", %, null)", d -> d.getTables(null, schema, "%", null));
            dump(md, "getTables(null, " + schema + ", %, [TABLE, VIEW, MATERIALIZED VIEW])",
                    d -> d.getTables(null, schema, "%", new String[] {"TABLE", "VIEW", "MATERIALIZED VIEW"}));
            dump(md, "getTables(null, null, " + table + ", [TABLE])",
                    d -> d.getTables(null, null, table, new String[] {"TABLE"}));
            dump(md, "getTables(null, pg_catalog, pg_class, null)",
                    d -> d.getTables(null, "pg_catalog", "pg_class", null));
            dump(md, "getColumns(null, " + schema + ", %, %)", d -> d.getColumns(null, schema, "%", "%"));
            dump(md, "getColumns(null, " + schema + ", " + table + ", n%)",
                    d -> d.getColumns(null, schema, table, "n%"));
            dump(md, "getPrimaryKeys(null, " + schema + ", " + table + ")",
                    d -> d.getPrimaryKeys(null, schema, table));
            dump(md, "getIndexInfo(null, " + schema + ", " + table + ", false, false)",
                    d -> d.getIndexInfo(null, schema, table, false, false));
            dump(md, "getIndexInfo(null, " + schema + ", " + table + ", true, false)",
                    d -> d.getIndexInfo(null, schema, table, true, false));
            dump(md, "getTypeInfo()", DatabaseMetaData::getTypeInfo);
        }
        out("done");
    }
}
