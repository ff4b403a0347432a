// SPDX-License-Identifier: Apache-2.0
// JmxProbe.java -- prints the bench broker's request counters (make bench,
// tests/bench/run.sh): one line "Produce=N Fetch=N ... EndTxn=N MessagesIn=N" from
// the broker's JMX port on loopback. A test tool only.
//
//   java -cp build/bench JmxProbe PORT
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

public class JmxProbe {
    public static void main(String[] args) throws Exception {
        JMXServiceURL url = new JMXServiceURL(
            "service:jmx:rmi:///jndi/rmi://127.0.0.1:" + args[0] + "/jmxrmi");
        try (JMXConnector c = JMXConnectorFactory.connect(url)) {
            MBeanServerConnection s = c.getMBeanServerConnection();
            StringBuilder out = new StringBuilder();
            for (String r : new String[] {"Produce", "Fetch", "Metadata", "ListOffsets",
                                           "AddPartitionsToTxn", "EndTxn"}) {
                ObjectName n = new ObjectName(
                    "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=" + r + ",version=*");
                long sum = 0;
                for (ObjectName o : s.queryNames(n, null))
                    sum += ((Number) s.getAttribute(o, "Count")).longValue();
                out.append(r).append('=').append(sum).append(' ');
            }
            Object m = s.getAttribute(new ObjectName(
                "kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec"), "Count");
            out.append("MessagesIn=").append(m);
            System.out.println(out);
        }
    }
}
