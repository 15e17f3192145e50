// SPDX-License-Identifier: MIT
//
// MariaDB Connector/J over JDBC, for test/compat/java.sh. The common steps
// use the driver's defaults (PreparedStatement parameters substituted
// client-side: useServerPrepStmts=false in Connector/J 2.x); the ps_*
// steps use a second connection with useServerPrepStmts=true
// (COM_STMT_PREPARE/EXECUTE). Prints the "key<TAB>value" lines described
// in test/compat/compat.sh.

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;

public final class Compat {
    private static final PrintStream OUT =
        new PrintStream(System.out, true, StandardCharsets.UTF_8);
    private static final String PROF =
        "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-prof_active'";
    private static final String POINT =
        "SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = ?";
    private static final String ECHO = "SELECT ?, ?, ?, ?";

    interface Step {
        Object run() throws Exception;
    }

    private static void out(String key, Object value) {
        OUT.print(key + "\t" + value + "\n");
    }

    private static String describe(Throwable e) {
        if (e instanceof SQLException) {
            SQLException s = (SQLException) e;
            String state = s.getSQLState() == null ? "-" : s.getSQLState();
            return s.getErrorCode() + "\t" + state + "\t" + s.getMessage().replace('\n', ' ');
        }
        return e.toString().replace('\n', ' ');
    }

    private static void step(String key, Step s) {
        try {
            out(key, s.run());
        } catch (Exception e) {
            out(key, "ERROR " + describe(e));
        }
    }

    private static String failure(Step s) {
        try {
            s.run();
        } catch (Exception e) {
            return describe(e);
        }
        return "no error";
    }

    private static String render(String v) {
        return v == null ? "NULL" : v;
    }

    private static boolean isCount(Object v) {
        if (v instanceof Long || v instanceof Integer || v instanceof Short
                || v instanceof java.math.BigInteger) {
            return ((Number) v).longValue() >= 0
                || v instanceof java.math.BigInteger && ((java.math.BigInteger) v).signum() >= 0;
        }
        return false;
    }

    private static String firstValue(ResultSet rs) throws SQLException {
        try (rs) {
            if (!rs.next()) {
                return "(no row)";
            }
            return render(rs.getString(1));
        }
    }

    private static String echo(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(ECHO)) {
            ps.setLong(1, 42);
            ps.setDouble(2, 2.5);
            ps.setString(3, "it's \\ \u00fc");
            ps.setNull(4, Types.VARCHAR);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return "(no row)";
                }
                List<String> v = new ArrayList<>();
                for (int i = 1; i <= 4; i++) {
                    v.add(render(rs.getString(i)));
                }
                return String.join("|", v);
            }
        }
    }

    private static String point(Connection c) throws SQLException {
        List<String> v = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(POINT)) {
            for (String name : new String[] {"allocated", "narenas"}) {
                ps.setString(1, name);
                v.add(firstValue(ps.executeQuery()));
            }
        }
        return String.join("|", v);
    }

    private static Connection connect(String extra) throws SQLException {
        String url = "jdbc:mariadb://" + System.getenv("HC_HOST") + ":" + System.getenv("HC_PORT")
            + "/" + System.getenv("HC_DB") + "?connectTimeout=10000&socketTimeout=20000" + extra;
        return DriverManager.getConnection(url, System.getenv("HC_USER"), System.getenv("HC_PASS"));
    }

    public static void main(String[] args) throws Exception {
        Connection c;
        try {
            c = connect("");
        } catch (SQLException e) {
            out("connect", "ERROR " + describe(e));
            out("done", "ok");
            return;
        }
        out("connect", "ok");

        step("stats_allocated", () -> {
            try (Statement st = c.createStatement();
                 ResultSet rs = st.executeQuery("SELECT * FROM stats_memory_jemalloc")) {
                ResultSetMetaData md = rs.getMetaData();
                List<String> cols = new ArrayList<>();
                for (int i = 1; i <= md.getColumnCount(); i++) {
                    cols.add(md.getColumnLabel(i));
                }
                out("stats_columns", String.join(",", cols));
                int n = 0;
                int bad = 0;
                String allocated = "(no row)";
                while (rs.next()) {
                    n++;
                    Object v = rs.getObject(2);
                    if (!isCount(v)) {
                        bad++;
                    }
                    if ("allocated".equals(rs.getString(1))) {
                        allocated = render(rs.getString(2));
                    }
                }
                out("stats_rows", n);
                out("stats_nonnumeric", bad);
                return allocated;
            }
        });

        for (String value : new String[] {"true", "false"}) {
            step("update_" + value, () -> {
                try (Statement st = c.createStatement()) {
                    return st.executeUpdate("UPDATE global_variables SET variable_value = '" + value
                        + "' WHERE variable_name = 'jemalloc-prof_active'");
                }
            });
            step("prof_active_" + value, () -> {
                try (Statement st = c.createStatement()) {
                    return firstValue(st.executeQuery(PROF));
                }
            });
        }

        step("error", () -> failure(() -> {
            try (Statement st = c.createStatement()) {
                return firstValue(st.executeQuery("SELECT * FROM no_such_table"));
            }
        }));
        step("after_error", () -> {
            try (Statement st = c.createStatement()) {
                return firstValue(st.executeQuery("SELECT 1"));
            }
        });
        step("param_echo", () -> echo(c));
        step("param_point", () -> point(c));
        c.close();

        // Server-side prepared statements.
        Connection p;
        try {
            p = connect("&useServerPrepStmts=true");
        } catch (SQLException e) {
            out("ps_connect", "ERROR " + describe(e));
            out("done", "ok");
            return;
        }
        step("ps_echo", () -> echo(p));
        step("ps_point", () -> point(p));
        step("ps_update", () -> {
            List<String> v = new ArrayList<>();
            try (PreparedStatement upd = p.prepareStatement(
                     "UPDATE global_variables SET variable_value = ? WHERE variable_name = ?");
                 PreparedStatement sel = p.prepareStatement(
                     "SELECT variable_value FROM global_variables WHERE variable_name = ?")) {
                for (String value : new String[] {"true", "false"}) {
                    upd.setString(1, value);
                    upd.setString(2, "jemalloc-prof_active");
                    v.add(Integer.toString(upd.executeUpdate()));
                    sel.setString(1, "jemalloc-prof_active");
                    v.add(firstValue(sel.executeQuery()));
                }
            }
            return String.join("|", v);
        });
        step("ps_error", () -> failure(() -> {
            try (PreparedStatement ps = p.prepareStatement("SELECT * FROM no_such_table")) {
                return firstValue(ps.executeQuery());
            }
        }));
        p.close();
        out("done", "ok");
    }
}
