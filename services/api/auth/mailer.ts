import nodemailer from 'nodemailer';
import type { Config } from '#shared/config.js';

/** One e-mail to send. */
export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/** Sends mail through SMTP_URL. */
export interface Mailer {
  send(mail: Mail): Promise<void>;
  close(): void;
}

/**
 * The account mails' SMTP transport (nodemailer), or undefined without
 * SMTP_URL. Nodemailer's own logger stays off: it would write the message, reset links included.
 */
export function createMailer(smtp: Config['smtp']): Mailer | undefined {
  if (!smtp) return undefined;
  const transport = nodemailer.createTransport(smtp.url, { from: smtp.from });
  return {
    async send(mail) {
      await transport.sendMail({ from: smtp.from, to: mail.to, subject: mail.subject, text: mail.text });
    },
    close() {
      transport.close();
    },
  };
}
